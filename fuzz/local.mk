# fuzz/: libFuzzer targets (docs/RELIABILITY.md).  Every build makes their replay programs,
# which `make check` runs on the committed corpus fuzz/corpus/<target>/ (seeds and every input
# that once found a bug); --enable-fuzzing (clang) also makes the fuzzers themselves, which
# fuzz/run.sh builds and runs.
#   npy   pk_npy_parse, the .npy reader
#   cli   the option parsing of `portkern` (tools/portkern.c and tools/cli_*.c, main renamed,
#         commands stopping after their checks: cli_parse_only)
#   json  cli_json_parse_flat, the reader of params.json
#   params params.json of every kernel: the flat reader, then the kernel's parameter table
#         (cli_params_apply in tools/cli_driver.c)
#   wisdom pk_wisdom_parse, the library's reader of wisdom files (lib/wisdom.c), and its writer
PK_FUZZ_CLI_SOURCES = fuzz/fuzz_cli.c $(tools_portkern_SOURCES)
PK_FUZZ_CLI_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools -Dmain=pk_cli_tool_main
PK_FUZZ_JSON_SOURCES = fuzz/fuzz_json.c tools/cli_common.c tools/cli_common.h
# The kernels' descriptors and the driver, without the tool's main.
PK_FUZZ_PARAMS_SOURCES = fuzz/fuzz_params.c $(PK_CLI_SOURCES)
# The reader is not exported: built from its sources and the error and string helpers it uses
# (own CPPFLAGS, so that these objects are not the library's libtool ones).
PK_FUZZ_WISDOM_SOURCES = fuzz/fuzz_wisdom.c lib/wisdom.c lib/error.c lib/util.c

# The targets that compile tools/cli_driver.c wait for its generated table (tools/local.mk).
$(fuzz_replay_cli_OBJECTS) $(fuzz_replay_params_OBJECTS) $(fuzz_fuzz_cli_OBJECTS) \
	$(fuzz_fuzz_params_OBJECTS): tools/cli_kernels.h

check_PROGRAMS += fuzz/replay_npy fuzz/replay_cli fuzz/replay_json fuzz/replay_params \
	fuzz/replay_wisdom
TESTS += fuzz/replay_npy fuzz/replay_cli fuzz/replay_json fuzz/replay_params fuzz/replay_wisdom
fuzz_replay_npy_SOURCES = fuzz/replay_main.c fuzz/fuzz_npy.c
fuzz_replay_npy_CPPFLAGS = $(AM_CPPFLAGS) -DPK_FUZZ_TARGET='"npy"'
fuzz_replay_cli_SOURCES = fuzz/replay_main.c $(PK_FUZZ_CLI_SOURCES)
fuzz_replay_cli_CPPFLAGS = $(PK_FUZZ_CLI_CPPFLAGS) -DPK_FUZZ_TARGET='"cli"'
fuzz_replay_cli_LDADD = libportkern.la
fuzz_replay_json_SOURCES = fuzz/replay_main.c $(PK_FUZZ_JSON_SOURCES)
fuzz_replay_json_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools -DPK_FUZZ_TARGET='"json"'
fuzz_replay_params_SOURCES = fuzz/replay_main.c $(PK_FUZZ_PARAMS_SOURCES)
fuzz_replay_params_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools \
	-DPK_FUZZ_TARGET='"params"'
fuzz_replay_params_LDADD = libportkern.la
fuzz_replay_wisdom_SOURCES = fuzz/replay_main.c $(PK_FUZZ_WISDOM_SOURCES)
fuzz_replay_wisdom_CPPFLAGS = $(AM_CPPFLAGS) -DPK_FUZZ_TARGET='"wisdom"'

if PK_FUZZING
noinst_PROGRAMS += fuzz/fuzz_npy fuzz/fuzz_cli fuzz/fuzz_json fuzz/fuzz_params fuzz/fuzz_wisdom
fuzz_fuzz_npy_SOURCES = fuzz/fuzz_npy.c
fuzz_fuzz_npy_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_cli_SOURCES = $(PK_FUZZ_CLI_SOURCES)
fuzz_fuzz_cli_CPPFLAGS = $(PK_FUZZ_CLI_CPPFLAGS)
fuzz_fuzz_cli_LDADD = libportkern.la
fuzz_fuzz_cli_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_json_SOURCES = $(PK_FUZZ_JSON_SOURCES)
fuzz_fuzz_json_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
fuzz_fuzz_json_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_params_SOURCES = $(PK_FUZZ_PARAMS_SOURCES)
fuzz_fuzz_params_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
fuzz_fuzz_params_LDADD = libportkern.la
fuzz_fuzz_params_LDFLAGS = -fsanitize=fuzzer
fuzz_fuzz_wisdom_SOURCES = $(PK_FUZZ_WISDOM_SOURCES)
fuzz_fuzz_wisdom_CPPFLAGS = $(AM_CPPFLAGS)
fuzz_fuzz_wisdom_LDFLAGS = -fsanitize=fuzzer
endif

EXTRA_DIST += fuzz/run.sh fuzz/npy.dict fuzz/cli.dict fuzz/json.dict fuzz/params.dict \
	fuzz/wisdom.dict fuzz/corpus

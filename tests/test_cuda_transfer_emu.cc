/* test_cuda_transfer_emu.cc - runtime.cu's host <-> device copies (pk_cuda_transfer) without
 * a GPU, on the emulated device of cuda/emulate.h, with 4 KiB staging chunks
 * (PORTKERN_TEST_CUDA_STAGING_CHUNK=4096):
 *  - pageable arrays of 0, 1, chunk - 1 (below the ring: the driver's copy), chunk, chunk + 1,
 *    3.5 chunks and 10 chunks + 7 bytes (the ring; every slot reused, a last partial
 *    chunk) each way, each direction checked on its own against a plain cudaMemcpy, with a
 *    guard after the host array; the path each took;
 *  - 2-D copies (pk_cuda_transfer_2d: the grid's box of rows): rows across chunk boundaries,
 *    rows longer than a chunk, contiguous rows, below the ring; the gaps between host rows
 *    never written;
 *  - the ring after earlier work on the legacy stream (a cudaMemset still queued);
 *  - pinned arrays (cudaHostAlloc) and device arrays as the "host" side: one direct copy;
 *  - cudaHostAlloc failing at each of the ring's chunks in turn: the copy falls back to the
 *    driver's own, right, nothing left pinned, and the run info's note says why;
 *  - a copy that fails inside the ring (a destination outside device memory): a clean error
 *    naming the chunk, and the ring works afterwards;
 *  - the default ring (4 x 16 MiB) on a 1 MiB + 3 byte array; pk_cuda_release frees it;
 *  - where a caller's array lies for an execute (pk_cuda_memory, pk_cuda_direct).
 * In the emulation a copy to or from pinned memory runs only when something waits for it,
 * so a slot reused before its DMA ended, or read before it, gives wrong bytes here.
 */
#include "cuda_emu_common.h"

#include <string>
#include <vector>

namespace {

const size_t C = 4096; /* the chunk this test sets */

void fill(std::vector<unsigned char> &v, unsigned seed)
{
    unsigned x = seed * 2654435761u + 1;
    for (auto &b : v) {
        x = x * 1103515245u + 12345u;
        b = (unsigned char)(x >> 23);
    }
}

/* The first byte where a and b differ in [0, n), or n. */
size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return n;
}

std::string paths_text(unsigned paths)
{
    std::string t;
    if (paths & PK_CUDA_PATH_RING) t += "+ring";
    if (paths & PK_CUDA_PATH_PINNED) t += "+pinned";
    if (paths & PK_CUDA_PATH_DEVICE) t += "+device";
    if (paths & PK_CUDA_PATH_PAGEABLE) t += "+pageable";
    return t.empty() ? "none" : t.substr(1);
}

const size_t GUARD = 64;

/* Pageable host -> device -> host for n bytes, each direction checked against a plain
 * cudaMemcpy; one TAP line. */
void check_round_trip(pk_cuda_state *s, size_t n, const char *label)
{
    const unsigned want = n == 0 ? 0u : n < C ? (unsigned)PK_CUDA_PATH_PAGEABLE
                                              : (unsigned)PK_CUDA_PATH_RING;
    std::vector<unsigned char> src(n + 1), up(n + 1), down(n + GUARD), ref(n + 1);
    fill(src, (unsigned)n + 3);
    fill(ref, (unsigned)n + 7);
    void *dev = nullptr;
    std::string why;
    pk_cuda_xfer x = {s, 0, 0};
    if (cudaMalloc(&dev, n + 1) != cudaSuccess) why = "cudaMalloc failed";
    /* up: host -> device through pk_cuda_transfer, read back by cudaMemcpy */
    pk_status st = PK_OK;
    double sec = -1;
    if (why.empty() && (st = pk_cuda_transfer(&x, dev, src.data(), n, 1, "test upload", &sec)) != PK_OK)
        why = std::string("upload: ") + emu_why(st);
    const unsigned up_paths = x.paths;
    if (why.empty() && n && cudaMemcpy(up.data(), dev, n, cudaMemcpyDeviceToHost) != cudaSuccess)
        why = "cudaMemcpy back failed";
    size_t d = why.empty() ? first_diff(up.data(), src.data(), n) : 0;
    if (why.empty() && d < n) why = "upload: byte " + std::to_string(d) + " differs";
    /* down: device (other bytes, put by cudaMemcpy) -> host through pk_cuda_transfer */
    memset(down.data(), 0xa5, down.size());
    x.paths = 0;
    if (why.empty() && n && cudaMemcpy(dev, ref.data(), n, cudaMemcpyHostToDevice) != cudaSuccess)
        why = "cudaMemcpy there failed";
    if (why.empty() && (st = pk_cuda_transfer(&x, down.data(), dev, n, 0, "test download", &sec)) != PK_OK)
        why = std::string("download: ") + emu_why(st);
    const unsigned down_paths = x.paths;
    d = why.empty() ? first_diff(down.data(), ref.data(), n) : 0;
    if (why.empty() && d < n) why = "download: byte " + std::to_string(d) + " differs";
    size_t over = 0;
    for (size_t i = n; i < n + GUARD; ++i) over += down[i] != 0xa5;
    if (why.empty() && over) why = std::to_string(over) + " bytes after the array written";
    if (why.empty() && (up_paths != want || down_paths != want))
        why = "paths " + paths_text(up_paths) + " / " + paths_text(down_paths) + ", expected " +
              paths_text(want);
    if (why.empty() && !(sec >= 0)) why = "no time";
    cudaFree(dev);
    ok(why.empty(), "%s (%zu bytes, %zu chunks): host -> device -> host equal, path %s%s%s",
       label, n, (n + C - 1) / C, paths_text(want).c_str(), why.empty() ? "" : "; ",
       why.c_str());
    emu_next_case();
}

/* pk_cuda_transfer_2d: rows of `width` bytes, `pitch` apart on the host, contiguous on the
 * device, each way against the bytes themselves; the host's gaps between rows (and after the
 * last) never written by a download. */
void check_2d(pk_cuda_state *s, size_t width, size_t rows, size_t pitch, const char *label)
{
    const size_t n = width * rows, span = pitch * rows + GUARD;
    const unsigned want = n == 0 ? 0u : n < C ? (unsigned)PK_CUDA_PATH_PAGEABLE
                                              : (unsigned)PK_CUDA_PATH_RING;
    std::vector<unsigned char> host(span), dense(n + 1), back(n + 1), down(span);
    fill(host, (unsigned)(width * 31 + rows));
    fill(dense, (unsigned)(pitch * 17 + rows));
    void *dev = nullptr;
    std::string why;
    pk_cuda_xfer x = {s, 0, 0};
    pk_status st = PK_OK;
    if (cudaMalloc(&dev, n + 1) != cudaSuccess) why = "cudaMalloc failed";
    if (why.empty() &&
        (st = pk_cuda_transfer_2d(&x, dev, host.data(), pitch, width, rows, 1, "test 2d up", NULL)))
        why = std::string("upload: ") + emu_why(st);
    const unsigned up_paths = x.paths;
    if (why.empty() && n && cudaMemcpy(back.data(), dev, n, cudaMemcpyDeviceToHost) != cudaSuccess)
        why = "cudaMemcpy back failed";
    for (size_t r = 0; why.empty() && r < rows; ++r)
        if (first_diff(back.data() + r * width, host.data() + r * pitch, width) < width)
            why = "upload: row " + std::to_string(r) + " differs";
    x.paths = 0;
    memset(down.data(), 0xa5, down.size());
    if (why.empty() && n && cudaMemcpy(dev, dense.data(), n, cudaMemcpyHostToDevice) != cudaSuccess)
        why = "cudaMemcpy there failed";
    if (why.empty() &&
        (st = pk_cuda_transfer_2d(&x, dev, down.data(), pitch, width, rows, 0, "test 2d down", NULL)))
        why = std::string("download: ") + emu_why(st);
    const unsigned down_paths = x.paths;
    size_t gaps = 0;
    for (size_t r = 0; why.empty() && r < rows; ++r) {
        if (first_diff(down.data() + r * pitch, dense.data() + r * width, width) < width)
            why = "download: row " + std::to_string(r) + " differs";
        for (size_t i = r * pitch + width; i < (r + 1) * pitch; ++i) gaps += down[i] != 0xa5;
    }
    for (size_t i = rows * pitch; i < span; ++i) gaps += down[i] != 0xa5;
    if (why.empty() && gaps) why = std::to_string(gaps) + " bytes between or after the rows written";
    if (why.empty() && (up_paths != want || down_paths != want))
        why = "paths " + paths_text(up_paths) + " / " + paths_text(down_paths) + ", expected " +
              paths_text(want);
    cudaFree(dev);
    ok(why.empty(), "2-D %s (%zu rows of %zu bytes, pitch %zu: %zu chunks): host rows -> device -> "
       "host rows equal, gaps untouched, path %s%s%s", label, rows, width, pitch, (n + C - 1) / C,
       paths_text(want).c_str(), why.empty() ? "" : "; ", why.c_str());
    emu_next_case();
}

/* Ring copies come after work queued earlier on the legacy stream (a plan's cudaMemset). */
void check_order(pk_cuda_state *s)
{
    const size_t n = 5 * C + 11;
    std::vector<unsigned char> src(n), back(n), want(n, 0x5a);
    fill(src, 99);
    void *dev = nullptr;
    pk_cuda_xfer x = {s, 0, 0};
    std::string why;
    pk_status st = PK_OK;
    if (cudaMalloc(&dev, n) != cudaSuccess) why = "cudaMalloc failed";
    /* queued memset, then a download: it must see the memset's bytes */
    if (why.empty() && cudaMemset(dev, 0x5a, n) != cudaSuccess) why = "cudaMemset failed";
    if (why.empty() && (st = pk_cuda_transfer(&x, back.data(), dev, n, 0, "test download", NULL)))
        why = emu_why(st);
    if (why.empty() && first_diff(back.data(), want.data(), n) < n)
        why = "a download did not see a queued cudaMemset";
    /* queued memset, then an upload: the memset must not land after it */
    if (why.empty() && cudaMemset(dev, 0, n) != cudaSuccess) why = "cudaMemset failed";
    if (why.empty() && (st = pk_cuda_transfer(&x, dev, src.data(), n, 1, "test upload", NULL)))
        why = emu_why(st);
    if (why.empty() && cudaMemcpy(back.data(), dev, n, cudaMemcpyDeviceToHost) != cudaSuccess)
        why = "cudaMemcpy back failed";
    if (why.empty() && first_diff(back.data(), src.data(), n) < n)
        why = "a queued cudaMemset overwrote an upload";
    cudaFree(dev);
    ok(why.empty() && x.paths == PK_CUDA_PATH_RING,
       "ring copies run after the legacy stream's earlier work (a queued cudaMemset) (%s%s%s)",
       paths_text(x.paths).c_str(), why.empty() ? "" : "; ", why.c_str());
    emu_next_case();
}

/* A pinned or a device array as the host side: one direct copy each way. */
void check_direct(pk_cuda_state *s, int device_side)
{
    const size_t n = 7 * C / 2;
    const unsigned want = device_side ? PK_CUDA_PATH_DEVICE : PK_CUDA_PATH_PINNED;
    std::vector<unsigned char> src(n), back(n), zero(n, 0);
    fill(src, 5 + device_side);
    unsigned char *side = nullptr;
    void *dev = nullptr;
    pk_cuda_xfer x = {s, 0, 0};
    std::string why;
    pk_status st = PK_OK;
    const long pinned_before = pk_emu_host_allocations();
    /* side <- bytes: a plain copy (pinned memory is host memory) */
    auto put = [&](const void *bytes) {
        if (!device_side) {
            memcpy(side, bytes, n);
            return true;
        }
        return cudaMemcpy(side, bytes, n, cudaMemcpyHostToDevice) == cudaSuccess;
    };
    const cudaError_t e = device_side ? cudaMalloc(&side, n)
                                      : cudaHostAlloc(&side, n, cudaHostAllocDefault);
    if (e != cudaSuccess || cudaMalloc(&dev, n) != cudaSuccess) why = "allocation failed";
    /* src goes up from the side array, which is then cleared and gets it back */
    if (why.empty() && !put(src.data())) why = "filling the side array failed";
    if (why.empty() && (st = pk_cuda_transfer(&x, dev, side, n, 1, "test upload", NULL)))
        why = std::string("upload: ") + emu_why(st);
    const unsigned up = x.paths;
    x.paths = 0;
    if (why.empty() && !put(zero.data())) why = "clearing the side array failed";
    if (why.empty() && (st = pk_cuda_transfer(&x, side, dev, n, 0, "test download", NULL)))
        why = std::string("download: ") + emu_why(st);
    const unsigned down = x.paths;
    if (!device_side)
        memcpy(back.data(), side, n);
    else if (why.empty() && cudaMemcpy(back.data(), side, n, cudaMemcpyDeviceToHost) != cudaSuccess)
        why = "cudaMemcpy back failed";
    if (why.empty() && first_diff(back.data(), src.data(), n) < n) why = "bytes differ";
    if (why.empty() && (up != want || down != want))
        why = "paths " + paths_text(up) + " / " + paths_text(down);
    if (device_side)
        cudaFree(side);
    else
        cudaFreeHost(side);
    cudaFree(dev);
    ok(why.empty() && pk_emu_host_allocations() == pinned_before,
       "a %s host side (%zu bytes) is copied directly both ways, path %s%s%s",
       device_side ? "device-memory" : "pinned", n, paths_text(want).c_str(),
       why.empty() ? "" : "; ", why.c_str());
    emu_next_case();
}

/* cudaHostAlloc failing for each of the ring's chunks in turn, on a fresh state: the copy
 * falls back to the driver's own (right bytes), nothing stays pinned, the note says why; the
 * ring is not tried again. */
void check_ring_oom(void)
{
    const size_t n = 7 * C / 2;
    std::vector<unsigned char> src(n), back(n);
    fill(src, 77);
    std::string why;
    char note[512] = "";
    int k;
    for (k = 1; k <= 4 && why.empty(); ++k) {
        pk_cuda_state s;
        char pwhy[256];
        memset(&s, 0, sizeof s);
        if (pk_cuda_probe(&s, pwhy, sizeof pwhy) != PK_OK) {
            why = std::string("probe: ") + pwhy;
            break;
        }
        void *dev = nullptr;
        pk_cuda_xfer x = {&s, 0, 0};
        pk_status st = PK_OK;
        const long before = pk_emu_host_allocations();
        if (cudaMalloc(&dev, n) != cudaSuccess) why = "cudaMalloc failed";
        pk_emu_fail_host_alloc(k);
        if (why.empty() && (st = pk_cuda_transfer(&x, dev, src.data(), n, 1, "test upload", NULL)))
            why = std::string("upload: ") + emu_why(st);
        pk_emu_fail_host_alloc(0);
        if (why.empty() && pk_emu_host_allocations() != before)
            why = "pinned chunks left after the failure";
        /* the ring is not tried again: a download takes the driver's copy too */
        if (why.empty() && (st = pk_cuda_transfer(&x, back.data(), dev, n, 0, "test download",
                                                  NULL)))
            why = std::string("download: ") + emu_why(st);
        if (why.empty() && first_diff(back.data(), src.data(), n) < n) why = "bytes differ";
        if (why.empty() && x.paths != PK_CUDA_PATH_PAGEABLE) why = "paths " + paths_text(x.paths);
        note[0] = '\0';
        pk_cuda_transfer_note(&x, note, sizeof note);
        if (why.empty() && !strstr(note, "pageable (no staging ring: cudaHostAlloc(4 x 4096 bytes, "
                                         "device 0): cudaErrorMemoryAllocation)"))
            why = std::string("note \"") + note + "\"";
        cudaFree(dev);
        pk_cuda_release(&s);
        emu_next_case();
    }
    ok(why.empty(),
       "cudaHostAlloc failing for each of the ring's 4 chunks in turn: the copies fall back to "
       "cudaMemcpy, right, nothing left pinned; \"%s\"%s%s (chunk %d)",
       note, why.empty() ? "" : "; ", why.c_str(), k - 1);
}

/* A copy failing inside the ring gives a clean error naming the chunk; the ring works on. */
void check_ring_error(pk_cuda_state *s)
{
    const size_t n = 3 * C;
    std::vector<unsigned char> src(n), not_device(n), back(n);
    fill(src, 31);
    pk_cuda_xfer x = {s, 0, 0};
    const pk_status st = pk_cuda_transfer(&x, not_device.data(), src.data(), n, 1, "test upload",
                                          NULL);
    const std::string err = pk_last_error();
    emu_next_case();
    void *dev = nullptr;
    pk_status st2 = cudaMalloc(&dev, n) == cudaSuccess ? PK_OK : PK_EDEVMEM;
    if (st2 == PK_OK) st2 = pk_cuda_transfer(&x, dev, src.data(), n, 1, "test upload", NULL);
    if (st2 == PK_OK) st2 = pk_cuda_transfer(&x, back.data(), dev, n, 0, "test download", NULL);
    cudaFree(dev);
    ok(st == PK_EDEVICE &&
           err.find("cudaMemcpyAsync(test upload, 12288 bytes through the staging ring, chunk 1 "
                    "of 3)") == 0 &&
           st2 == PK_OK && first_diff(back.data(), src.data(), n) == n,
       "a copy failing inside the ring: %s \"%.140s\"; the ring works afterwards (%s)",
       pk_status_name(st), err.c_str(), emu_why(st2));
    emu_next_case();
}

/* The run info's words for each path. */
void check_note(pk_cuda_state *s)
{
    pk_cuda_xfer x = {s, 0, PK_CUDA_PATH_RING | PK_CUDA_PATH_PAGEABLE};
    char a[256] = "earlier", b[256] = "";
    pk_cuda_transfer_note(&x, a, sizeof a);
    x.paths = PK_CUDA_PATH_PINNED | PK_CUDA_PATH_DEVICE;
    pk_cuda_transfer_note(&x, b, sizeof b);
    x.paths = 0;
    char c[16] = "";
    pk_cuda_transfer_note(&x, c, sizeof c);
    ok(!strcmp(a, "earlier; transfer: staged ring 4x4 KiB, pageable") &&
           !strcmp(b, "transfer: pinned, device") && c[0] == '\0',
       "the run info's note: \"%s\", \"%s\", nothing without copies", a, b);
}

/* pk_cuda_memory and pk_cuda_direct, the choice of an execute on the caller's arrays:
 * device arrays run in place, host (pageable, pinned), short or misaligned ones go through
 * the transfers, an output over an input is refused. */
void check_memory(pk_cuda_state *s)
{
    const size_t n = 1024;
    char *dev = nullptr, *pin = nullptr;
    std::vector<char> host(n);
    std::string why;
    if (cudaMalloc((void **)&dev, 2 * n) != cudaSuccess ||
        cudaHostAlloc((void **)&pin, n, cudaHostAllocDefault) != cudaSuccess) {
        ok(0, "pk_cuda_memory: test buffers (%s)", emu_fault_note());
        return;
    }
    pk_cuda_xfer x = {s, 0, 0};
    const struct {
        const void *p;
        size_t bytes;
        int want;
        const char *what;
    } m[] = {{host.data(), n, PK_MEM_HOST, "pageable"}, {pin, n, PK_MEM_HOST, "pinned"},
             {dev, 2 * n, PK_MEM_DEVICE, "device"},  {dev + n, n, PK_MEM_DEVICE, "device, tail"},
             {dev + n, n + 1, PK_MEM_OTHER, "device, one byte too long"}};
    for (const auto &c : m) {
        const int got = pk_cuda_memory(&x, c.p, c.bytes);
        if (got != c.want)
            why += std::string("; ") + c.what + ": " + std::to_string(got) + " not " +
                   std::to_string(c.want);
    }
    int direct = -1;
    pk_cuda_arg a[2] = {{dev, n, "x", 0}, {dev + n, n, "y", 1}};
    pk_status st = pk_cuda_direct(&x, a, 2, &direct);
    if (st != PK_OK || direct != 1 || x.paths != PK_CUDA_PATH_NONE)
        why += "; two device arrays: not direct";
    x.paths = 0;
    const pk_cuda_arg mixed[3][2] = {{{dev, n, "x", 0}, {host.data(), n, "y", 1}},
                                     {{pin, n, "x", 0}, {dev + n, n, "y", 1}},
                                     {{dev + 8, n, "x", 0}, {dev + n, n, "y", 1}}};
    for (int i = 0; i < 3; ++i) {
        st = pk_cuda_direct(&x, mixed[i], 2, &direct);
        if (st != PK_OK || direct != 0 || x.paths != 0)
            why += "; case " + std::to_string(i) + " (pageable, pinned, misaligned): direct";
    }
    pk_cuda_arg over[2] = {{dev, n, "psi", 0}, {dev + 512, n, "chi", 1}};
    st = pk_cuda_direct(&x, over, 2, &direct);
    const std::string err = pk_last_error();
    if (st != PK_EINVAL || direct != 0 || err.find("chi overlaps psi") == std::string::npos)
        why += "; overlap: " + std::string(pk_status_name(st)) + " " + err;
    char note[128] = "";
    x.paths = PK_CUDA_PATH_NONE;
    pk_cuda_transfer_note(&x, note, sizeof note);
    if (strcmp(note, "transfer: device pointers, none")) why += std::string("; note ") + note;
    ok(why.empty(),
       "pk_cuda_memory, pk_cuda_direct: device arrays direct (\"%s\"); pageable, pinned, "
       "misaligned or mixed through the transfers; an overlap PK_EINVAL%s",
       note, why.c_str());
    cudaFree(dev);
    cudaFreeHost(pin);
    emu_next_case();
}

/* The default ring: 4 x 16 MiB, from 1 MiB on; freed by pk_cuda_release. */
void check_default_ring(void)
{
    const size_t n = ((size_t)1 << 20) + 3;
    std::vector<unsigned char> src(n), back(n);
    fill(src, 1);
    char keep[32] = "";
    const char *v = getenv("PORTKERN_TEST_CUDA_STAGING_CHUNK");
    if (v) snprintf(keep, sizeof keep, "%s", v);
    unsetenv("PORTKERN_TEST_CUDA_STAGING_CHUNK");
    pk_cuda_state s;
    char pwhy[256] = "", note[256] = "";
    memset(&s, 0, sizeof s);
    pk_status st = pk_cuda_probe(&s, pwhy, sizeof pwhy);
    if (keep[0]) setenv("PORTKERN_TEST_CUDA_STAGING_CHUNK", keep, 1);
    void *dev = nullptr;
    pk_cuda_xfer x = {&s, 0, 0};
    const long before = pk_emu_host_allocations();
    if (st == PK_OK && cudaMalloc(&dev, n) != cudaSuccess) st = PK_EDEVMEM;
    if (st == PK_OK) st = pk_cuda_transfer(&x, dev, src.data(), n, 1, "test upload", NULL);
    if (st == PK_OK) st = pk_cuda_transfer(&x, back.data(), dev, n, 0, "test download", NULL);
    const long held = pk_emu_host_allocations() - before;
    pk_cuda_transfer_note(&x, note, sizeof note);
    cudaFree(dev);
    pk_cuda_release(&s);
    ok(st == PK_OK && first_diff(back.data(), src.data(), n) == n &&
           !strcmp(note, "transfer: staged ring 4x16 MiB") && held == 4 &&
           pk_emu_host_allocations() == before,
       "default ring: %zu bytes each way equal, \"%s\", %ld chunks pinned until pk_cuda_release "
       "(%s)", n, note, held, emu_why(st));
    emu_next_case();
}

} // namespace

int main(void)
{
    setenv("PORTKERN_TEST_CUDA_STAGING_CHUNK", "4096", 1);
    emu_begin("runtime.cu's transfers");
    pk_cuda_state *s = emu_state();
    ok(s->ring_chunk == C && s->ring_chunks == 4 && s->copy_threads >= 1,
       "PORTKERN_TEST_CUDA_STAGING_CHUNK=4096: a ring of %d x %zu bytes, %d copy threads",
       s->ring_chunks, s->ring_chunk, s->copy_threads);
    check_round_trip(s, 0, "empty");
    check_round_trip(s, 1, "one byte");
    check_round_trip(s, C - 1, "chunk - 1");
    check_round_trip(s, C, "one chunk");
    check_round_trip(s, C + 1, "chunk + 1");
    check_round_trip(s, 7 * C / 2, "3.5 chunks");
    check_round_trip(s, 10 * C + 7, "10 chunks + 7");
    check_2d(s, 100, 3, 132, "small, below the ring");
    check_2d(s, 1000, 37, 1544, "rows across chunk boundaries");
    check_2d(s, 3 * C + 8, 5, 4 * C, "rows longer than a chunk");
    check_2d(s, 512, 64, 512, "pitch = width (contiguous)");
    check_2d(s, 0, 5, 64, "zero width");
    check_order(s);
    check_direct(s, 0);
    check_direct(s, 1);
    check_ring_error(s);
    check_note(s);
    check_memory(s);
    check_ring_oom();
    check_default_ring();
    return emu_end();
}

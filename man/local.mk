# man/: the manual pages of the two tools (written from their --help texts; keep in step).
dist_man_MANS = man/portkern.1 man/portkern-probe.1

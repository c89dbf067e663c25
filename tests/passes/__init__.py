"""IR-in / IR-out tests of the compiler core's rewrites: small ttg modules (shrunk from real builds)
parsed, one pass run, its output checked; no whole-kernel build, milliseconds each."""

# Condenses a libFuzzer log to what a crash report needs: the panic message, the backtrace frames
# outside the standard library and registry crates, sanitizer errors (with their first frames),
# hangs and out-of-memory reports, and libFuzzer's summary. Used by fuzz/smoke.sh and
# bench/fuzz_long.sh:  awk -f fuzz/crash_summary.awk LOG
/panicked at/ { panic = 1; lines = 0; print; next }
panic && /^stack backtrace:/ { panic = 0; trace = 1; shown = 0; print "backtrace (project frames):"; next }
panic { if (lines++ < 8) print; next }
trace && /^ *[0-9]+: / { frame = $0; sub(/^ */, "", frame); next }
trace && /^ +at / {
  if ($2 !~ /^\/rustc\// && $2 !~ /\/\.cargo\/registry\// && $2 !~ /csu\// && shown++ < 10) print "  " frame " at " $2
  next
}
trace && !/^ / { trace = 0 }
/== ?ERROR: AddressSanitizer|== ?ERROR: LeakSanitizer/ { print; asan = 1; frames = 0; next }
asan && /^ +#[0-9]+ / { if (frames++ < 10) print; next }
asan && !/^ +#/ { asan = 0 }
/== ?ERROR: libFuzzer|^SUMMARY:|ALARM:|Test unit written to/ { print }

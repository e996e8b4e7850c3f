# The fuzz targets: name, source file and libFuzzer options (sourced by
# build.sh and run.sh). -max_len fits what each parser is handed in service.
FUZZ_ALL_TARGETS=(json cgi timestamp anchor changelog signingkeys envelope fastcgi)
# Not libFuzzer: the built command-line tools run as processes (args.py).
FUZZ_PROCESS_TARGETS=(args)

# FUZZ_OPTIMIZE: -O (the default: make fuzz, the long runs) or -Onone (make
# test's few seconds a target: the build takes a third of the CPU of the -O
# one, and the targets run at a third to a fifth of its speed). Each build
# has its own folder, so the two never rebuild each other; the corpus, the
# artifacts and the logs stay in FUZZ_OUT (.build/fuzz), shared.
FUZZ_OPTIMIZE="${FUZZ_OPTIMIZE:--O}"
case "$FUZZ_OPTIMIZE" in
    -O) fuzz_built="${FUZZ_OUT:-.build/fuzz}" ;;
    -Onone) fuzz_built="${FUZZ_OUT:-.build/fuzz}/onone" ;;
    *) echo "FUZZ_OPTIMIZE is -O or -Onone, not $FUZZ_OPTIMIZE" >&2; exit 2 ;;
esac

fuzz_source() {
    case "$1" in
        json) echo JSONFuzz.swift ;;
        cgi) echo CGIFuzz.swift ;;
        timestamp) echo TimestampFuzz.swift ;;
        anchor) echo AnchorFuzz.swift ;;
        changelog) echo ChangeLogFuzz.swift ;;
        signingkeys) echo SigningKeysFuzz.swift ;;
        envelope) echo EnvelopeFuzz.swift ;;
        fastcgi) echo FastCGIFuzz.swift ;;
        *) echo "unknown fuzz target: $1" >&2; return 1 ;;
    esac
}

fuzz_options() {
    case "$1" in
        json) echo "-max_len=4096 -dict=Tests/Fuzz/dict/json.dict" ;;
        cgi) echo "-max_len=4096 -dict=Tests/Fuzz/dict/cgi.dict" ;;
        timestamp) echo "-max_len=64 -dict=Tests/Fuzz/dict/timestamp.dict" ;;
        anchor) echo "-max_len=64" ;;
        changelog) echo "-max_len=256 -dict=Tests/Fuzz/dict/changelog.dict" ;;
        signingkeys) echo "-max_len=1024" ;;
        envelope) echo "-max_len=4096 -dict=Tests/Fuzz/dict/json.dict" ;;
        fastcgi) echo "-max_len=4096 -dict=Tests/Fuzz/dict/fastcgi.dict" ;;
    esac
}

# The fuzz targets: name, source file and libFuzzer options (sourced by
# build.sh and run.sh). -max_len fits what each parser is handed in service.
FUZZ_ALL_TARGETS=(json cgi timestamp anchor changelog signingkeys envelope fastcgi)
# Not libFuzzer: the built command-line tools run as processes (args.py).
FUZZ_PROCESS_TARGETS=(args)

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

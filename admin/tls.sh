#!/usr/bin/env bash
# mockcloud-admin tls: the local certificate authority and the server
# certificate it signs (run as `mockcloud-admin tls ...`, or directly).
#
#   tls.sh [--dir DIR] ensure [NAME|ADDRESS]...   make what is missing; a new
#                       server certificate when the names changed or it ends
#                       within 30 days (the CA stays: the phone notices nothing)
#   tls.sh [--dir DIR] renew [NAME|ADDRESS]...    a new server certificate now
#   tls.sh [--dir DIR] show [OUT.crt]             where the CA is; writes the
#                       CA certificate for the phone to OUT.crt (./mockcloud-ca.crt)
#
# DIR (default /etc/mockcloud/tls) holds ca.key and key.pem (mode 0600: they
# never leave DIR), ca.crt, cert.pem (the server certificate) and names.
# Without NAMEs, ensure/renew keep the names on record, or use this box's:
# localhost, its host names, NAME.local, 127.0.0.1, ::1 and its addresses.
#
# The CA (10 years) is name-constrained to the names it was made for, so
# it cannot vouch for any other site even if its key leaked; the server
# certificate has CA:FALSE, serverAuth, the names as subjectAltName and
# 825 days, the longest iOS accepts from a CA a user installed.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
readonly PROG="mockcloud-admin tls"
warn() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { warn "$*"; exit 1; }

DIR=/etc/mockcloud/tls
if [[ "${1:-}" == --dir ]]; then
    [[ $# -ge 2 ]] || die "--dir needs a directory"
    DIR="$2"
    shift 2
fi
command="${1:-show}"
[[ $# -eq 0 ]] || shift
command -v openssl >/dev/null || die "openssl is not installed: apt-get install openssl"

# This box's names and addresses, one a line.
box_names() {
    local name addr
    printf '%s\n' localhost 127.0.0.1 ::1
    for name in "$(hostname 2>/dev/null || true)" "$(hostname -f 2>/dev/null || true)"; do
        [[ -n "$name" && "$name" != localhost ]] || continue
        printf '%s\n' "$name"
        [[ "$name" == *.* ]] || printf '%s.local\n' "$name"
    done
    for addr in $(hostname -I 2>/dev/null || true); do
        [[ "$addr" != fe80:* ]] && printf '%s\n' "$addr"
    done
}

is_ip() { [[ "$1" =~ ^[0-9.]+$ || "$1" == *:* ]]; }

# "DNS:a,IP:b" from names, one a line.
san_of() {
    local name entries=()
    while read -r name; do
        [[ -n "$name" ]] || continue
        if is_ip "$name"; then entries+=("IP:$name"); else entries+=("DNS:$name"); fi
    done
    (IFS=,; printf '%s' "${entries[*]}")
}

# nameConstraints for the CA: each name exactly (a host mask per address).
constraints_of() {
    local name entries=()
    while read -r name; do
        [[ -n "$name" ]] || continue
        if [[ "$name" == *:* ]]; then
            entries+=("permitted;IP:$name/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF")
        elif is_ip "$name"; then
            entries+=("permitted;IP:$name/255.255.255.255")
        else
            entries+=("permitted;DNS:$name")
        fi
    done
    (IFS=,; printf 'critical,%s' "${entries[*]}")
}

check_names() {
    local name
    for name in "$@"; do
        [[ "$name" =~ ^[A-Za-z0-9.:-]{1,253}$ ]] ||
            die "'$name' is not a host name or an IP address"
    done
}

# The names to use: the arguments, else those on record, else the box's.
wanted_names() {
    if (($# > 0)); then
        check_names "$@"
        printf '%s\n' "$@"
    elif [[ -s "$DIR/names" ]]; then
        cat "$DIR/names"
    else
        box_names
    fi | awk 'NF && !seen[$0]++'
}

make_ca() {
    local names="$1" log="$DIR/openssl.log"
    (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
        -days 3650 -subj "/CN=MockCloud local CA ($(hostname 2>/dev/null || echo box))" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "nameConstraints=$(constraints_of <<<"$names")" \
        -keyout "$DIR/ca.key.new" -out "$DIR/ca.crt.new" 2>"$log") ||
        die "openssl could not make the CA: $(cat "$log")"
    chmod 0600 "$DIR/ca.key.new"
    chmod 0644 "$DIR/ca.crt.new"
    mv -f "$DIR/ca.key.new" "$DIR/ca.key"
    mv -f "$DIR/ca.crt.new" "$DIR/ca.crt"
    printf '%s\n' "$names" >"$DIR/ca-names"
    rm -f "$log"
    warn "made a local CA in $DIR/ca.crt (trust it on the phone: mockcloud-admin tls show)"
}

make_leaf() {
    local names="$1" log="$DIR/openssl.log" first
    first="$(head -n 1 <<<"$names")"
    (umask 077 && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
        -subj "/CN=$first" -keyout "$DIR/key.pem.new" -out "$DIR/server.csr" 2>"$log" &&
        openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" \
            -CAcreateserial -CAserial "$DIR/ca.srl" -sha256 -days 825 -out "$DIR/cert.pem.new" \
            -extfile <(printf '%s\n' \
                "basicConstraints=critical,CA:FALSE" \
                "keyUsage=critical,digitalSignature" \
                "extendedKeyUsage=serverAuth" \
                "subjectKeyIdentifier=hash" \
                "authorityKeyIdentifier=keyid" \
                "subjectAltName=$(san_of <<<"$names")") 2>>"$log") ||
        die "openssl could not make the server certificate: $(cat "$log")"
    chmod 0600 "$DIR/key.pem.new"
    chmod 0644 "$DIR/cert.pem.new"
    mv -f "$DIR/key.pem.new" "$DIR/key.pem"
    mv -f "$DIR/cert.pem.new" "$DIR/cert.pem"
    rm -f "$DIR/server.csr" "$log"
    printf '%s\n' "$names" >"$DIR/names"
}

# True when every name is one the CA may vouch for.
within_ca() {
    local name
    while read -r name; do
        grep -qxF -- "$name" "$DIR/ca-names" || return 1
    done <<<"$1"
}

ensure() {
    local renew="$1" names
    shift
    names="$(wanted_names "$@")"
    mkdir -p -m 0700 "$DIR"
    if [[ ! -s "$DIR/ca.key" || ! -s "$DIR/ca.crt" ]]; then
        make_ca "$names"
        renew=yes
    elif ! within_ca "$names"; then
        die "the CA in $DIR/ca.crt is constrained to $(paste -sd' ' "$DIR/ca-names"); for other names make a new CA (the phone must trust it again): rm $DIR/ca.key $DIR/ca.crt, then run this again"
    fi
    if [[ -z "$renew" && -s "$DIR/cert.pem" && -s "$DIR/key.pem" && "$(cat "$DIR/names" 2>/dev/null)" == "$names" ]] &&
        openssl x509 -in "$DIR/cert.pem" -noout -checkend $((30 * 86400)) >/dev/null 2>&1 &&
        openssl verify -CAfile "$DIR/ca.crt" "$DIR/cert.pem" >/dev/null 2>&1; then
        return 0
    fi
    make_leaf "$names"
    warn "server certificate for $(paste -sd' ' <<<"$names") in $DIR/cert.pem, valid until $(openssl x509 -in "$DIR/cert.pem" -noout -enddate | cut -d= -f2)"
}

show() {
    local out="${1:-./mockcloud-ca.crt}"
    [[ -s "$DIR/ca.crt" ]] || die "no CA in $DIR: run 'mockcloud-admin tls ensure' (as root)"
    cp "$DIR/ca.crt" "$out.new" && chmod 0644 "$out.new" && mv -f "$out.new" "$out" ||
        die "cannot write $out"
    printf 'CA certificate:     %s (its key %s/ca.key stays there, mode 0600)\n' "$DIR/ca.crt" "$DIR"
    printf 'SHA-256:            %s\n' "$(openssl x509 -in "$DIR/ca.crt" -noout -fingerprint -sha256 | cut -d= -f2)"
    printf 'server certificate: %s, valid until %s\n' "$DIR/cert.pem" \
        "$(openssl x509 -in "$DIR/cert.pem" -noout -enddate 2>/dev/null | cut -d= -f2 || echo '?')"
    printf 'names:              %s\n' "$(paste -sd' ' "$DIR/names" 2>/dev/null || echo '?')"
    printf 'for the phone:      %s\n' "$(realpath "$out")"
    cat <<'TEXT'
On the iPhone: AirDrop the .crt to it (or open it in Safari from a web page or
Files), then Settings > General > VPN & Device Management > the MockCloud
profile > Install; then Settings > General > About > Certificate Trust
Settings > turn on full trust for "MockCloud local CA". Check the SHA-256
above against the profile's. Test from a computer:
  curl --cacert mockcloud-ca.crt https://<box>:8443/user/settings -H 'X-User-Key: u1'
TEXT
}

case "$command" in
    ensure) ensure "" "$@" ;;
    renew) ensure yes "$@" ;;
    show) show "$@" ;;
    -h | --help) sed -n '2,24s/^# \{0,1\}//p' "$0" ;;
    *) sed -n '2,24s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac

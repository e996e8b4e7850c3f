#!/usr/bin/env bash
# mockcloud-admin doctor: checks a package installation and prints one line
# per problem with the command that fixes it; exit 0 when healthy, 1 when not.
#
#   doctor.sh [--url https://127.0.0.1:8443]
#
# Checks: the programs, fcgiwrap (socket, user) or in the FastCGI mode
# each program's socket unit and pool (socket, user), the data directory (owner
# www-data, 0700), the key, token and certificate key files (modes), the
# certificate (verifies with the CA, ends in more than 30 days), nginx -t,
# the site enabled or the snippet included, and a live GET /user/settings
# through nginx with the CA (no -k). Run it as root. Of the processes it
# judges only MockCloud's own: the fcgiwrap processes (or the FastCGI
# pools) that hold the sockets the site names, and the workers of the nginx
# in nginx's pid file (another
# fcgiwrap or nginx on the box, e.g. a git web front end's, is not its
# business).
set -uo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
PREFIX="${MOCKCLOUD_PREFIX:-}"    # a root to check instead of / (the package test)
LIB="$PREFIX/usr/lib/mockcloud"
ETC="$PREFIX/etc/mockcloud"
DATA="$PREFIX/var/lib/mockcloud"
SITE="$PREFIX/etc/nginx/sites-available/mockcloud"
ENABLED="$PREFIX/etc/nginx/sites-enabled/mockcloud"
NGINX_PID_FILE="$PREFIX/run/nginx.pid"
USER_NAME=www-data
URL=""
while (($# > 0)); do
    case "$1" in
        --url) URL="${2:-}"; shift 2 || shift ;;
        -h | --help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "usage: mockcloud-admin doctor [--url https://HOST:PORT]" >&2; exit 2 ;;
    esac
done

problems=0
problem() { printf 'problem: %s\n    fix: %s\n' "$1" "$2"; problems=$((problems + 1)); }
warning() { printf 'warning: %s\n    fix: %s\n' "$1" "$2"; }

# The value of a `set $NAME VALUE;` line of the site ("" when unset or "").
site_setting() {
    sed -n "s/^[[:space:]]*set[[:space:]]*\\\$$1[[:space:]]*\"\\{0,1\\}\\([^\";]*\\)\"\\{0,1\\};.*/\\1/p" "$SITE" 2>/dev/null | head -n 1
}

# owner_mode FILE: "owner mode", e.g. "www-data 600".
owner_mode() { stat -c '%U %a' "$1" 2>/dev/null; }

# The fcgiwrap socket the site passes requests to.
SOCKET="$(site_setting mockcloud_fcgi)"
SOCKET="${SOCKET#unix:}"
SOCKET="$PREFIX${SOCKET:-/run/fcgiwrap.socket}"

# proc_field PID NAME: a field of /proc/PID/status ("Uid" gives the real,
# effective, saved and file-system uids).
proc_field() { awk -v want="$2:" '$1 == want { $1 = ""; print substr($0, 2); exit }' "/proc/$1/status" 2>/dev/null; }

# The FastCGI mode's socket directory the site names ("": the CGI mode).
FASTCGI_DIR="$(site_setting mockcloud_fastcgi)"

# behind SOCKET NAME: the processes called NAME listening on SOCKET: those
# holding the socket whose inode /proc/net/unix lists for that path
# (systemd, which holds it too for socket activation, is not one of them).
behind() {
    local inodes name="$2"
    inodes="$(awk -v path="$1" '$NF == path { print "socket:[" $7 "]" }' /proc/net/unix 2>/dev/null | sort -u)"
    [[ -n "$inodes" ]] || return 0
    # Every process's sockets in one pass (a readlink per descriptor takes
    # seconds on a box with a few thousand of them).
    find /proc/[0-9]*/fd -maxdepth 1 -lname 'socket:*' -printf '%h %l\n' 2>/dev/null |
        awk -v inodes="$inodes" '
            BEGIN { n = split(inodes, list, "\n"); for (i = 1; i <= n; i++) wanted[list[i]] = 1 }
            $2 in wanted { split($1, path, "/"); print path[3] }' | sort -un |
        while read -r pid; do
            [[ "$(proc_field "$pid" Name)" == "$name" ]] && printf '%s\n' "$pid"
        done
}

# The worker processes of the nginx whose master PID-FILE names.
nginx_workers() {
    local master
    master="$(cat "$1" 2>/dev/null)"
    [[ "$master" =~ ^[0-9]+$ && "$(proc_field "$master" Name)" == nginx ]] || return 0
    # cat, not awk, opens the files: awk stops at the first one whose
    # process ended after the glob (any CGI request's, on a busy box), and
    # the workers after it would go unchecked. Pid comes before PPid.
    cat /proc/[0-9]*/status 2>/dev/null |
        awk -v master="$master" '$1 == "Pid:" { pid = $2 } $1 == "PPid:" && $2 == master { print pid }'
}

# -- programs
for p in cgi-bin/user-settings cgi-bin/inbox; do
    [[ -f "$LIB/$p" && -x "$LIB/$p" ]] ||
        problem "$LIB/$p is missing or not executable" "apt-get install --reinstall mockcloud"
done

# as_root PID: true when any of PID's uids (real, effective, saved) is 0.
as_root() { [[ " $(proc_field "$1" Uid) " == *" 0 "* ]]; }

if [[ -z "$FASTCGI_DIR" ]]; then
    # -- the CGI mode: fcgiwrap, its socket and the user it runs as
    if [[ ! -S "$SOCKET" ]]; then
        problem "fcgiwrap's socket $SOCKET is missing (fcgiwrap is not running)" "systemctl enable --now fcgiwrap.socket"
    else
        [[ "$(stat -c %U "$SOCKET")" == "$USER_NAME" ]] ||
            problem "$SOCKET belongs to $(stat -c %U "$SOCKET"), not $USER_NAME (nginx's workers cannot reach it)" \
                "systemctl restart fcgiwrap.socket fcgiwrap.service"
    fi
    for pid in $(behind "$SOCKET" fcgiwrap); do
        ! as_root "$pid" ||
            problem "fcgiwrap (pid $pid, behind $SOCKET) runs as root: every program would too" "systemctl revert fcgiwrap.service && systemctl restart fcgiwrap.socket fcgiwrap.service"
    done
else
    # -- the FastCGI mode: each program's socket unit and its pool. A pool
    # not running yet is fine (the socket starts it on the first request);
    # one that systemd gave up on, or that runs as root, is not.
    for unit in mockcloud-fastcgi@.socket mockcloud-fastcgi@.service mockcloud-fastcgi-waits@.socket mockcloud-fastcgi-waits@.service; do
        [[ -f "$PREFIX/lib/systemd/system/$unit" ]] ||
            problem "the FastCGI mode's unit $unit is missing" "apt-get install --reinstall mockcloud"
    done
    # Each program's pool, and its pool for waits (the same program).
    for pool in user-settings user-settings-waits inbox inbox-waits; do
        program="${pool%-waits}"
        unit="mockcloud-fastcgi@$program"
        [[ "$pool" == "$program" ]] || unit="mockcloud-fastcgi-waits@$program"
        sock="$PREFIX$FASTCGI_DIR/$pool.sock"
        if [[ ! -S "$sock" ]]; then
            problem "the site passes $program's $([[ "$pool" == "$program" ]] && echo routes || echo waits) to $sock (\$mockcloud_fastcgi), which is not a socket ($unit.socket is not running)" \
                "systemctl enable --now $unit.socket, or set \$mockcloud_fastcgi \"\" in $SITE for the CGI mode"
        elif [[ "$(stat -c %U "$sock")" != "$USER_NAME" ]]; then
            problem "$sock belongs to $(stat -c %U "$sock"), not $USER_NAME (nginx's workers cannot reach it)" \
                "systemctl revert $unit.socket && systemctl restart $unit.socket $unit.service"
        fi
        if [[ -d "$PREFIX/run/systemd/system" ]] && systemctl is-failed --quiet "$unit.service" 2>/dev/null; then
            problem "$unit.service has failed" "journalctl -u $unit.service; then systemctl restart $unit.service"
        fi
        for pid in $(behind "$sock" "$program"); do
            ! as_root "$pid" ||
                problem "the $pool pool (pid $pid, behind $sock) runs as root" "systemctl revert $unit.service && systemctl restart $unit.service"
        done
    done
fi
for pid in $(nginx_workers "$NGINX_PID_FILE"); do
    ! as_root "$pid" ||
        problem "an nginx worker (pid $pid, of the nginx in $NGINX_PID_FILE) runs as root" "set 'user www-data;' in /etc/nginx/nginx.conf, then systemctl restart nginx"
done

# -- the data directory
if [[ ! -d "$DATA" ]]; then
    problem "the data directory $DATA is missing" "install -d -o www-data -g www-data -m 0700 $DATA"
elif [[ "$(owner_mode "$DATA")" != "$USER_NAME 700" ]]; then
    problem "the data directory $DATA is $(owner_mode "$DATA") (owner, mode), not $USER_NAME 700" \
        "chown -R www-data:www-data $DATA && chmod 0700 $DATA"
elif [[ -n "$(find "$DATA" ! -user "$USER_NAME" -print -quit 2>/dev/null)" ]]; then
    problem "$(find "$DATA" ! -user "$USER_NAME" -print -quit) (in the data directory) does not belong to $USER_NAME" \
        "chown -R www-data:www-data $DATA"
fi

# -- the key and token files the site names, and the TLS keys
for setting in hmac_keys tokens; do
    file="$(site_setting "mockcloud_$setting")"
    [[ -n "$file" ]] || continue
    file="$PREFIX$file"
    if [[ ! -f "$file" ]]; then
        problem "the site names $file (\$mockcloud_$setting), which does not exist" \
            "$([[ $setting == tokens ]] && echo "mockcloud-admin token $file phone" || echo "umask 077; printf 'k1:%s\\n' \"\$(openssl rand -hex 32)\" > $file; chown www-data:www-data $file")"
    elif [[ "$(owner_mode "$file")" != "$USER_NAME 600" && "$(owner_mode "$file")" != "$USER_NAME 400" ]]; then
        problem "$file is $(owner_mode "$file") (owner, mode): it must be $USER_NAME's, mode 0600, or every request fails" \
            "chown www-data:www-data $file && chmod 0600 $file"
    fi
done
for file in "$ETC/tls/ca.key" "$ETC/tls/key.pem"; do
    if [[ ! -f "$file" ]]; then
        problem "$file is missing" "mockcloud-admin tls ensure && systemctl reload nginx"
    elif [[ "$(owner_mode "$file")" != "root 600" ]]; then
        problem "$file is $(owner_mode "$file") (owner, mode), not root 600" "chown root:root $file && chmod 0600 $file"
    fi
done

# -- the certificate
cert="$ETC/tls/cert.pem"
if [[ -f "$cert" && -f "$ETC/tls/ca.crt" ]]; then
    if ! openssl verify -CAfile "$ETC/tls/ca.crt" "$cert" >/dev/null 2>&1; then
        problem "$cert does not verify with $ETC/tls/ca.crt (expired, or from another CA)" "mockcloud-admin tls renew && systemctl reload nginx"
    elif ! openssl x509 -in "$cert" -noout -checkend $((30 * 86400)) >/dev/null 2>&1; then
        warning "$cert ends $(openssl x509 -in "$cert" -noout -enddate | cut -d= -f2), in under 30 days" \
            "mockcloud-admin tls renew && systemctl reload nginx"
    fi
elif [[ ! -f "$ETC/tls/ca.crt" ]]; then
    problem "no CA certificate in $ETC/tls" "mockcloud-admin tls ensure && systemctl reload nginx"
fi

# -- nginx
if ! command -v nginx >/dev/null; then
    problem "nginx is not installed" "apt-get install nginx"
else
    if ! out="$(nginx -t 2>&1)"; then
        problem "nginx -t fails: $(grep -m1 emerg <<<"$out" || tail -n 1 <<<"$out")" "edit what nginx -t names, then: nginx -t && systemctl reload nginx"
    fi
    if [[ -z "$URL" ]]; then
        if [[ -e "$ENABLED" ]]; then
            port="$(sed -n 's/^[[:space:]]*listen[[:space:]]*\([0-9]*\)[[:space:]]*ssl.*/\1/p' "$ENABLED" | head -n 1)"
            URL="https://127.0.0.1:${port:-8443}"
        elif nginx -T 2>/dev/null | grep -q 'include[[:space:]].*mockcloud-locations.conf'; then
            warning "the mockcloud site is not enabled and another server includes the snippet: no live check" \
                "mockcloud-admin doctor --url https://127.0.0.1:PORT"
        else
            problem "the mockcloud site is not enabled and no server includes the snippet" \
                "ln -s /etc/nginx/sites-available/mockcloud /etc/nginx/sites-enabled/mockcloud && nginx -t && systemctl reload nginx"
        fi
    fi
fi

# -- a live GET /user/settings through nginx, verifying the certificate
if [[ -n "$URL" ]]; then
    target="${URL#https://}"
    target="${target%%/*}"
    host="${target%:*}"
    answer="$(printf 'GET /user/settings HTTP/1.1\r\nHost: %s\r\nX-User-Key: mockcloud-doctor\r\nConnection: close\r\n\r\n' "$host" |
        timeout 10 openssl s_client -quiet -connect "$target" -servername localhost -CAfile "$ETC/tls/ca.crt" \
            -verify_return_error -verify_ip "$host" 2>&1)"
    status="$(grep -m1 -o '^HTTP/1\.[01] [0-9]*' <<<"$answer" | cut -d' ' -f2)"
    if [[ "$status" != 200 && "$status" != 404 ]]; then
        if [[ -z "$status" ]]; then
            problem "GET $URL/user/settings: no answer ($(grep -m1 -iE 'error|refused|verify' <<<"$answer" || echo 'connection failed'))" \
                "systemctl start nginx, and check /var/log/nginx/error.log"
        else
            problem "GET $URL/user/settings answered $status: $(tail -n 1 <<<"$answer" | cut -c1-200)" \
                "read /var/log/nginx/error.log; mockcloud-admin doctor names the usual causes above"
        fi
    fi
fi

if ((problems == 0)); then
    echo "mockcloud-admin doctor: healthy"
    exit 0
fi
echo "mockcloud-admin doctor: $problems problem(s)"
exit 1

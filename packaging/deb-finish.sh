# Sourced by packaging/build-deb.sh and build-sync-deb.sh: the last steps of
# a package, the same for both.
#
#   finish_deb ROOT CONTROL_IN NAME [MD5_EXCLUDE]
# writes ROOT/DEBIAN/control from CONTROL_IN (@VERSION@, @SIZE@ filled in)
# and DEBIAN/md5sums (files whose path matches the grep pattern MD5_EXCLUDE,
# conffiles say, left out), builds $MOCKCLOUD_DIST (default dist/)
# NAME_<VERSION>_amd64.deb and prints its path and size. Needs REPO and
# VERSION set. MOCKCLOUD_DEB_COMPRESSION: dpkg-deb's -Z (default xz; the
# unit tests, which check the contents, build theirs with none: xz costs
# them 20 CPU-seconds a package).
finish_deb() {
    local root="$1" control="$2" name="$3" exclude="${4:-^$}" size dist out
    size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    sed -e "s/@VERSION@/$VERSION/" -e "s/@SIZE@/$size/" "$control" >"$root/DEBIAN/control"
    (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
        xargs -0 md5sum | { grep -v -- "$exclude" || true; } >DEBIAN/md5sums)
    chmod 0644 "$root/DEBIAN/md5sums"
    dist="${MOCKCLOUD_DIST:-$REPO/dist}"
    mkdir -p "$dist"
    out="$dist/${name}_${VERSION}_amd64.deb"
    dpkg-deb --root-owner-group -Z"${MOCKCLOUD_DEB_COMPRESSION:-xz}" --build "$root" "$out" >/dev/null
    printf "%s (%s KiB)\n" "${out#"$REPO"/}" "$(($(stat -c %s "$out") / 1024))"
}

// The helpers that need no Glibc (the temporary directory, JSON as text, a
// repository's files) live in MockCloudPortableTestSupport, which the
// client's portable tests use alone; every other test target gets them here.
@_exported import MockCloudPortableTestSupport

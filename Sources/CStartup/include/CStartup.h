#ifndef MOCKCLOUD_CSTARTUP_H
#define MOCKCLOUD_CSTARTUP_H

/// Runs libcrypto's CPU capability probe if it has not run yet. The static
/// CGI programs skip the probe at load time (see startup.c); call this
/// before hashing enough bytes for SHA-NI or AVX2 to pay for it.
void mockcloud_probe_cpu_for_crypto(void);

#endif

#ifndef MOCKCLOUD_CARGV_H
#define MOCKCLOUD_CARGV_H

// Nothing to call: argv.c replaces two Swift runtime functions at link time
// in the static release builds of the CGI programs.

#endif

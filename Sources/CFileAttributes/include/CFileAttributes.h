// Extended attributes (sys/xattr.h), which Swift's Glibc module does not export.
// Haul records a finished file's validators in one, to recognise the file on a rerun.
#ifndef HAUL_CFILEATTRIBUTES_H
#define HAUL_CFILEATTRIBUTES_H
#ifdef __linux__
#include <sys/xattr.h>
#endif
#endif

// Header-only target; see include/CFileAttributes.h.

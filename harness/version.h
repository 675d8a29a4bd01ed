/* The tool's version (--version, the JSON report's "version") and the JSON
 * report's schema number (additions keep it; a change of meaning bumps it). */
#ifndef HX_VERSION_H
#define HX_VERSION_H

#define HX_VERSION "0.9.0"
#define HX_REPORT_SCHEMA 1

#endif

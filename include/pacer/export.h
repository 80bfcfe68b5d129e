/* Symbol export for libpacer: the library is built with -fvisibility=hidden
 * and only declarations marked PACER_API are exported. */
#ifndef PACER_EXPORT_H
#define PACER_EXPORT_H

#if defined(__GNUC__)
#define PACER_API __attribute__((visibility("default")))
#else
#define PACER_API
#endif

#endif

/* GLX and EGL buffer swaps (display.h): each an outer present. Whatever
 * the driver does inside the swap to hand the frame over — an image upload
 * (software rendering), a Present, a wl_surface commit — is that one
 * frame, counted on the window it went to, with the swap's source; a
 * swap whose frame the agent did not see go anywhere counts on its own
 * surface (the drawable, or the EGLSurface).
 *
 *   glXSwapBuffers                    exported by libGL / libGLX
 *   eglSwapBuffers                    exported by libEGL
 *   eglSwapBuffersWithDamageKHR/EXT   extensions: reached through
 *                                     eglGetProcAddress, which hands out
 *                                     the agent's wrappers
 *   glXGetProcAddress[ARB]            hands out the agent's glXSwapBuffers
 *
 * A program that looks the swap up in a library handle of its own
 * (dlopen + dlsym: SDL) bypasses these; its frames are still seen where
 * the driver hands them over, with that path's source.
 */
#define EGL_EGLEXT_PROTOTYPES 1

#include "display.h"

#include <pacer/base/clock.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/glx.h>

#include <string.h>

#define LIBEGL "libEGL.so.1"
#define LIBGLX "libGLX.so.0"

typedef void (*glx_swap_fn)(Display *, GLXDrawable);
typedef EGLBoolean (*egl_swap_fn)(EGLDisplay, EGLSurface);
typedef EGLBoolean (*egl_swap_damage_fn)(EGLDisplay, EGLSurface, const EGLint *, EGLint);
typedef __eglMustCastToProperFunctionPointerType (*egl_proc_fn)(const char *);
typedef void (*(*glx_proc_fn)(const GLubyte *))(void);

static struct {
    glx_swap_fn glx_swap;
    egl_swap_fn egl_swap;
    egl_swap_damage_fn egl_swap_damage_khr, egl_swap_damage_ext;
    egl_proc_fn egl_proc;
    glx_proc_fn glx_proc, glx_proc_arb;
} G;

AGENT_EXPORT void glXSwapBuffers(Display *d, GLXDrawable drawable)
{
    AGENT_REAL(G.glx_swap, LIBGLX, "glXSwapBuffers");
    if (!display_on()) {
        G.glx_swap(d, drawable);
        return;
    }
    display_outer_begin(DS_GLX);
    G.glx_swap(d, drawable);
    display_outer_end(SK_X11, drawable, mono_ns());
}

AGENT_EXPORT EGLBoolean eglSwapBuffers(EGLDisplay d, EGLSurface s)
{
    AGENT_REAL(G.egl_swap, LIBEGL, "eglSwapBuffers");
    if (!display_on())
        return G.egl_swap(d, s);
    display_outer_begin(DS_EGL);
    EGLBoolean r = G.egl_swap(d, s);
    display_outer_end(SK_EGL, (uint64_t)(uintptr_t)s, mono_ns());
    return r;
}

static EGLBoolean swap_damage(egl_swap_damage_fn real, EGLDisplay d, EGLSurface s, const EGLint *rects, EGLint n)
{
    if (!display_on())
        return real(d, s, rects, n);
    display_outer_begin(DS_EGL);
    EGLBoolean r = real(d, s, rects, n);
    display_outer_end(SK_EGL, (uint64_t)(uintptr_t)s, mono_ns());
    return r;
}

static EGLBoolean swap_damage_khr(EGLDisplay d, EGLSurface s, const EGLint *rects, EGLint n)
{
    return swap_damage(G.egl_swap_damage_khr, d, s, rects, n);
}

static EGLBoolean swap_damage_ext(EGLDisplay d, EGLSurface s, const EGLint *rects, EGLint n)
{
    return swap_damage(G.egl_swap_damage_ext, d, s, rects, n);
}

AGENT_EXPORT __eglMustCastToProperFunctionPointerType eglGetProcAddress(const char *name)
{
    AGENT_REAL(G.egl_proc, LIBEGL, "eglGetProcAddress");
    __eglMustCastToProperFunctionPointerType f = G.egl_proc(name);
    if (!f || !name)
        return f;
    if (strcmp(name, "eglSwapBuffersWithDamageKHR") == 0) {
        *(void **)&G.egl_swap_damage_khr = (void *)f;
        return (__eglMustCastToProperFunctionPointerType)swap_damage_khr;
    }
    if (strcmp(name, "eglSwapBuffersWithDamageEXT") == 0) {
        *(void **)&G.egl_swap_damage_ext = (void *)f;
        return (__eglMustCastToProperFunctionPointerType)swap_damage_ext;
    }
    if (strcmp(name, "eglSwapBuffers") == 0) {
        AGENT_REAL(G.egl_swap, LIBEGL, "eglSwapBuffers");
        if (G.egl_swap)
            return (__eglMustCastToProperFunctionPointerType)eglSwapBuffers;
    }
    return f;
}

static void (*glx_proc(glx_proc_fn real, const GLubyte *name))(void)
{
    void (*f)(void) = real(name);
    if (f && name && strcmp((const char *)name, "glXSwapBuffers") == 0) {
        AGENT_REAL(G.glx_swap, LIBGLX, "glXSwapBuffers");
        if (G.glx_swap)
            return (void (*)(void))glXSwapBuffers;
    }
    return f;
}

AGENT_EXPORT void (*glXGetProcAddress(const GLubyte *name))(void)
{
    AGENT_REAL(G.glx_proc, LIBGLX, "glXGetProcAddress");
    return glx_proc(G.glx_proc, name);
}

AGENT_EXPORT void (*glXGetProcAddressARB(const GLubyte *name))(void)
{
    AGENT_REAL(G.glx_proc_arb, LIBGLX, "glXGetProcAddressARB");
    return glx_proc(G.glx_proc_arb, name);
}

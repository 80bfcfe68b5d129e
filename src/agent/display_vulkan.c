/* Vulkan presents (display.h): vkQueuePresentKHR, an outer present per
 * swapchain, and which native window each swapchain presents to, so that
 * a driver presenting from a thread of its own (Mesa's X11 FIFO queue) is
 * not counted a second time there.
 *
 * The loader exports every function below, and a program reaches them
 * either by name (through the PLT: the agent's come first) or through
 * vkGetInstanceProcAddr / vkGetDeviceProcAddr, which the agent also
 * exports: for these names they hand out the agent's functions, which call
 * the loader's exported ones (the loader's trampolines dispatch by the
 * handle, so they serve every instance and device).
 *
 *   vkCreate{Xcb,Xlib,Wayland}SurfaceKHR   VkSurfaceKHR → its window
 *   vkCreateSwapchainKHR                   VkSwapchainKHR → that window,
 *                                          whose frames become Vulkan's
 *   vkDestroySwapchainKHR                  forgotten
 *   vkQueuePresentKHR                      a frame per swapchain presented
 *
 * A program that loads vkGetInstanceProcAddr from a library handle of its
 * own (SDL) bypasses these; its frames are still seen where the driver
 * hands them to the display.
 */
#define VK_USE_PLATFORM_XCB_KHR 1
#define VK_USE_PLATFORM_XLIB_KHR 1
#define VK_USE_PLATFORM_WAYLAND_KHR 1

#include "display.h"

#include <pacer/base/clock.h>

#include <vulkan/vulkan.h>

#include <pthread.h>
#include <string.h>

#define LIBVULKAN "libvulkan.so.1"
#define MAX_HANDLES 64

/* VkSurfaceKHR or VkSwapchainKHR → the native window it draws to. */
typedef struct native {
    uint64_t vk; /* 0: free */
    surface_kind kind;
    uint64_t window;
} native;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static native surfaces[MAX_HANDLES], swapchains[MAX_HANDLES];

static void remember(native *table, uint64_t vk, surface_kind kind, uint64_t window)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_HANDLES; i++)
        if (!table[i].vk || table[i].vk == vk) {
            table[i] = (native){vk, kind, window};
            break;
        }
    pthread_mutex_unlock(&mu);
}

static bool look_up(native *table, uint64_t vk, native *ret)
{
    bool found = false;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_HANDLES && !found; i++)
        if (table[i].vk == vk) {
            *ret = table[i];
            found = true;
        }
    pthread_mutex_unlock(&mu);
    return found;
}

static void forget(native *table, uint64_t vk)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_HANDLES; i++)
        if (table[i].vk == vk)
            table[i].vk = 0;
    pthread_mutex_unlock(&mu);
}

static struct {
    PFN_vkGetInstanceProcAddr instance_proc;
    PFN_vkGetDeviceProcAddr device_proc;
    PFN_vkCreateXcbSurfaceKHR create_xcb;
    PFN_vkCreateXlibSurfaceKHR create_xlib;
    PFN_vkCreateWaylandSurfaceKHR create_wayland;
    PFN_vkCreateSwapchainKHR create_swapchain;
    PFN_vkDestroySwapchainKHR destroy_swapchain;
    PFN_vkQueuePresentKHR present;
} V;

#define REAL(slot, name)                                \
    do {                                                \
        AGENT_REAL(slot, LIBVULKAN, name);              \
        if (!(slot))                                    \
            return VK_ERROR_INITIALIZATION_FAILED;      \
    } while (0)

AGENT_EXPORT VkResult vkCreateXcbSurfaceKHR(VkInstance instance, const VkXcbSurfaceCreateInfoKHR *info,
                                            const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    REAL(V.create_xcb, "vkCreateXcbSurfaceKHR");
    VkResult r = V.create_xcb(instance, info, alloc, ret);
    if (r == VK_SUCCESS && info && ret && display_on())
        remember(surfaces, (uint64_t)*ret, SK_X11, info->window);
    return r;
}

AGENT_EXPORT VkResult vkCreateXlibSurfaceKHR(VkInstance instance, const VkXlibSurfaceCreateInfoKHR *info,
                                             const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    REAL(V.create_xlib, "vkCreateXlibSurfaceKHR");
    VkResult r = V.create_xlib(instance, info, alloc, ret);
    if (r == VK_SUCCESS && info && ret && display_on())
        remember(surfaces, (uint64_t)*ret, SK_X11, info->window);
    return r;
}

AGENT_EXPORT VkResult vkCreateWaylandSurfaceKHR(VkInstance instance, const VkWaylandSurfaceCreateInfoKHR *info,
                                                const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    REAL(V.create_wayland, "vkCreateWaylandSurfaceKHR");
    VkResult r = V.create_wayland(instance, info, alloc, ret);
    if (r == VK_SUCCESS && info && ret && display_on())
        remember(surfaces, (uint64_t)*ret, SK_WAYLAND, (uint64_t)(uintptr_t)info->surface);
    return r;
}

AGENT_EXPORT VkResult vkCreateSwapchainKHR(VkDevice device, const VkSwapchainCreateInfoKHR *info,
                                           const VkAllocationCallbacks *alloc, VkSwapchainKHR *ret)
{
    REAL(V.create_swapchain, "vkCreateSwapchainKHR");
    VkResult r = V.create_swapchain(device, info, alloc, ret);
    native n;
    if (r == VK_SUCCESS && info && ret && display_on() && look_up(surfaces, (uint64_t)info->surface, &n)) {
        remember(swapchains, (uint64_t)*ret, n.kind, n.window);
        display_outer_owned(n.kind, n.window);
    }
    return r;
}

AGENT_EXPORT void vkDestroySwapchainKHR(VkDevice device, VkSwapchainKHR swapchain, const VkAllocationCallbacks *alloc)
{
    AGENT_REAL(V.destroy_swapchain, LIBVULKAN, "vkDestroySwapchainKHR");
    if (!V.destroy_swapchain)
        return;
    V.destroy_swapchain(device, swapchain, alloc);
    forget(swapchains, (uint64_t)swapchain);
}

AGENT_EXPORT VkResult vkQueuePresentKHR(VkQueue queue, const VkPresentInfoKHR *info)
{
    REAL(V.present, "vkQueuePresentKHR");
    if (!display_on() || !info || !info->swapchainCount)
        return V.present(queue, info);
    display_outer_begin(DS_VULKAN);
    VkResult r = V.present(queue, info);
    int64_t t = mono_ns();
    for (uint32_t i = 0; i < info->swapchainCount; i++) {
        uint64_t sc = (uint64_t)info->pSwapchains[i];
        native n = {sc, SK_VULKAN, sc};
        look_up(swapchains, sc, &n);
        if (i > 0)
            display_outer_begin(DS_VULKAN); /* one frame per swapchain */
        display_outer_end(n.kind, n.window, t);
    }
    return r;
}

/* The agent's function for `name`, when it has one and the real lookup
 * found the real one (the extension is enabled). */
static PFN_vkVoidFunction ours(const char *name, PFN_vkVoidFunction real)
{
    if (!real || !name)
        return real;
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } table[] = {
        {"vkCreateXcbSurfaceKHR", (PFN_vkVoidFunction)vkCreateXcbSurfaceKHR},
        {"vkCreateXlibSurfaceKHR", (PFN_vkVoidFunction)vkCreateXlibSurfaceKHR},
        {"vkCreateWaylandSurfaceKHR", (PFN_vkVoidFunction)vkCreateWaylandSurfaceKHR},
        {"vkCreateSwapchainKHR", (PFN_vkVoidFunction)vkCreateSwapchainKHR},
        {"vkDestroySwapchainKHR", (PFN_vkVoidFunction)vkDestroySwapchainKHR},
        {"vkQueuePresentKHR", (PFN_vkVoidFunction)vkQueuePresentKHR},
        {"vkGetDeviceProcAddr", (PFN_vkVoidFunction)vkGetDeviceProcAddr},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].fn;
    return real;
}

AGENT_EXPORT PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name)
{
    AGENT_REAL(V.instance_proc, LIBVULKAN, "vkGetInstanceProcAddr");
    if (!V.instance_proc)
        return NULL;
    PFN_vkVoidFunction f = V.instance_proc(instance, name);
    return display_on() ? ours(name, f) : f;
}

AGENT_EXPORT PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char *name)
{
    AGENT_REAL(V.device_proc, LIBVULKAN, "vkGetDeviceProcAddr");
    if (!V.device_proc)
        return NULL;
    PFN_vkVoidFunction f = V.device_proc(device, name);
    return display_on() ? ours(name, f) : f;
}

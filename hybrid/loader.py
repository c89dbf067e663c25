"""``hybrid.load_bundle``: launch a bundled kernel through the GPU driver: no Triton JIT, no
Triton launcher, no C compiler.

cffi in ABI mode opens the driver library (the CUDA driver API, or the HIP runtime on AMD),
picks the bundle's binary for the device (exact architecture first, then a compatible one),
checks its sha256, that it is an ELF binary for the entry's architecture and that what it declares
about its entry agrees with the manifest (the entry symbol, parameter count and sizes, CTA and
cluster size: ``manifest_schema.check_binary``), loads it and
launches it with the arguments packed per the manifest: the kernel's parameters, then the
hidden trailing ones Triton adds (scratch pointers). Arguments are checked before the driver
is touched, so mistakes fail the same way with or without a GPU. The bundle is read as untrusted
input (``scheduler.bundle``: confined, bounded, its manifest checked against the format first),
and with ``trusted_keys`` only if a trusted key signed it, for this kernel (``scheduler.signing``).
"""
from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass, field

import cffi

from scheduler.bundle import read_bundle
from scheduler.grid import GridError, check_grid
from scheduler.manifest_schema import BundleError, ManifestError, UntrustedBundle, check_binary

__all__ = ["ArgumentError", "BundleError", "BundledKernel", "DriverNotFound", "GridError", "HashMismatch",
           "ManifestError", "NoBinaryForDevice", "UntrustedBundle", "load_bundle", "select_target"]

CUDA_LIBRARY = "libcuda.so.1"
HIP_LIBRARY = "libamdhip64.so"

ffi = cffi.FFI()
ffi.cdef("""
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device);
CUresult cuCtxGetCurrent(CUcontext *ctx);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name);
CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value);
CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY, unsigned int blockZ,
                        unsigned int sharedMemBytes, CUstream stream, void **params, void **extra);
CUresult cuGetErrorString(CUresult error, const char **message);

typedef int hipError_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
hipError_t hipInit(unsigned int flags);
hipError_t hipSetDevice(int device);
hipError_t hipGetDeviceProperties(void *properties, int device);
hipError_t hipGetDevicePropertiesR0600(void *properties, int device);
hipError_t hipModuleLoadData(hipModule_t *module, const void *image);
hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *name);
hipError_t hipMalloc(void **ptr, size_t bytes);
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
                                 unsigned int blockX, unsigned int blockY, unsigned int blockZ,
                                 unsigned int sharedMemBytes, hipStream_t stream, void **params, void **extra);
const char *hipGetErrorString(hipError_t error);
""")

#: Scalar parameter types the loader packs, as C types (Triton passes these by value).
SCALARS = {"i1": "int8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t", "u1": "uint8_t",
           "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t", "fp32": "float", "fp64": "double"}
#: Pointer element types -> the torch dtype a tensor argument must have.
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "i1": "bool",
                "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8"}
_CUDA_COMPUTE_CAPABILITY = (75, 76)          # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR
_CUDA_MAX_DYNAMIC_SHARED = 8                 # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_DEFAULT_SHARED_LIMIT = 48 * 1024            # above this a CUDA kernel must opt in


class NoBinaryForDevice(BundleError):
    pass


class HashMismatch(BundleError):
    pass


class DriverNotFound(BundleError):
    pass


class ArgumentError(TypeError):
    """Launch arguments that do not fit the kernel's signature (checked before the driver)."""


# -- architecture selection ---------------------------------------------------------------------
def _sm(isa: str) -> tuple[int, int, bool] | None:
    """``sm_90a`` -> (9, 0, True): major, minor, architecture-specific (runs on exactly that GPU)."""
    match = re.fullmatch(r"sm_(\d+)(\d)(a?)", isa)
    return (int(match.group(1)), int(match.group(2)), bool(match.group(3))) if match else None


def select_target(targets: dict[str, dict], device: str, kernel: str = "kernel") -> str:
    """The bundle target to run on ``device`` (``sm_86``, ``sm_90``, ``gfx942``): its exact
    architecture first, else the newest compatible one (a non-``a`` NVIDIA binary runs on later
    minors of its major; AMD code objects run on their exact gfx only)."""
    exact = [t for t, e in targets.items() if e["isa"] in (device, device + "a")]
    if exact:
        return exact[0]
    dev = _sm(device)
    compatible = sorted((_sm(e["isa"])[1], t) for t, e in targets.items() if dev and _sm(e["isa"])
                        and not _sm(e["isa"])[2] and _sm(e["isa"])[0] == dev[0] and _sm(e["isa"])[1] <= dev[1])
    if compatible:
        return compatible[-1][1]
    have = ", ".join(f"{t} ({e['isa']})" for t, e in targets.items()) or "nothing"
    raise NoBinaryForDevice(f"bundle '{kernel}' has no binary for this GPU ({device}); it has: {have}. "
                            f"Rebuild it with `hybrid build ... --target <this GPU's target>`.")


# -- drivers ------------------------------------------------------------------------------------
class _Driver:
    api = ""
    library = ""

    def __init__(self, library: str | None, device: int):
        self.library = library or self.library
        try:
            self.lib = ffi.dlopen(self.library)
        except OSError as exc:
            raise DriverNotFound(f"cannot open the {self.api} library '{self.library}' ({exc}); launching a "
                                 f"bundle needs a GPU driver (pass driver_library= for another path)") from None
        self.device = device
        self.arch = self._init_device()

    def check(self, status: int, call: str) -> None:
        if status != 0:
            raise BundleError(f"{call} failed: {self.error_string(status)} ({self.api} error {status})")


class CudaDriver(_Driver):
    api, library, backend = "CUDA driver", CUDA_LIBRARY, "cuda"

    def _init_device(self) -> str:
        self.check(self.lib.cuInit(0), "cuInit")
        handle, value = ffi.new("CUdevice *"), ffi.new("int *")
        self.check(self.lib.cuDeviceGet(handle, self.device), "cuDeviceGet")
        self.handle = handle[0]
        cc = []
        for attribute in _CUDA_COMPUTE_CAPABILITY:
            self.check(self.lib.cuDeviceGetAttribute(value, attribute, self.handle), "cuDeviceGetAttribute")
            cc.append(value[0])
        return f"sm_{cc[0]}{cc[1]}"

    def error_string(self, status: int) -> str:
        message = ffi.new("const char **")
        self.lib.cuGetErrorString(status, message)
        return ffi.string(message[0]).decode() if message[0] != ffi.NULL else "unknown error"

    def load(self, binary: bytes, name: str, shared: int):
        context = ffi.new("CUcontext *")
        self.check(self.lib.cuCtxGetCurrent(context), "cuCtxGetCurrent")
        if context[0] == ffi.NULL:   # no context yet (torch not initialized): use the device's primary one
            self.check(self.lib.cuDevicePrimaryCtxRetain(context, self.handle), "cuDevicePrimaryCtxRetain")
            self.check(self.lib.cuCtxSetCurrent(context[0]), "cuCtxSetCurrent")
        module, function = ffi.new("CUmodule *"), ffi.new("CUfunction *")
        self.check(self.lib.cuModuleLoadData(module, ffi.from_buffer(binary)), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(function, module[0], name.encode()), "cuModuleGetFunction")
        if shared > _DEFAULT_SHARED_LIMIT:
            self.check(self.lib.cuFuncSetAttribute(function[0], _CUDA_MAX_DYNAMIC_SHARED, shared), "cuFuncSetAttribute")
        return function[0]

    def alloc(self, nbytes: int) -> int:
        ptr = ffi.new("CUdeviceptr *")
        self.check(self.lib.cuMemAlloc_v2(ptr, nbytes), "cuMemAlloc")
        return ptr[0]

    def launch(self, function, grid, block: int, shared: int, stream: int, params) -> None:
        self.check(self.lib.cuLaunchKernel(function, *grid, block, 1, 1, shared, ffi.cast("CUstream", stream), params,
                                           ffi.NULL), "cuLaunchKernel")


class HipDriver(_Driver):
    api, library, backend = "HIP runtime", HIP_LIBRARY, "hip"

    def _init_device(self) -> str:
        self.check(self.lib.hipInit(0), "hipInit")
        self.check(self.lib.hipSetDevice(self.device), "hipSetDevice")
        # hipDeviceProp_t's layout changes between ROCm releases; its gcnArchName
        # ("gfx942:sramecc+:xnack-") is the one field that starts with "gfx".
        properties = ffi.new("char[16384]")
        get = getattr(self.lib, "hipGetDevicePropertiesR0600", None) or self.lib.hipGetDeviceProperties
        self.check(get(properties, self.device), "hipGetDeviceProperties")
        match = re.search(rb"gfx[0-9a-f]+", ffi.buffer(properties)[:])
        if match is None:
            raise BundleError("hipGetDeviceProperties: no gcnArchName found")
        return match.group().decode()

    def error_string(self, status: int) -> str:
        return ffi.string(self.lib.hipGetErrorString(status)).decode()

    def load(self, binary: bytes, name: str, shared: int):
        module, function = ffi.new("hipModule_t *"), ffi.new("hipFunction_t *")
        self.check(self.lib.hipModuleLoadData(module, ffi.from_buffer(binary)), "hipModuleLoadData")
        self.check(self.lib.hipModuleGetFunction(function, module[0], name.encode()), "hipModuleGetFunction")
        return function[0]

    def alloc(self, nbytes: int) -> int:
        ptr = ffi.new("void **")
        self.check(self.lib.hipMalloc(ptr, nbytes), "hipMalloc")
        return int(ffi.cast("uintptr_t", ptr[0]))

    def launch(self, function, grid, block: int, shared: int, stream: int, params) -> None:
        self.check(self.lib.hipModuleLaunchKernel(function, *grid, block, 1, 1, shared, ffi.cast("hipStream_t", stream),
                                                  params, ffi.NULL), "hipModuleLaunchKernel")


DRIVERS = {"cuda": CudaDriver, "hip": HipDriver}


def open_driver(library: str | None = None, device: int = 0) -> _Driver:
    """The driver of the GPU present: ``library`` if given, else CUDA, else HIP."""
    if library is not None:
        return (HipDriver if "amdhip" in library else CudaDriver)(library, device)
    errors = []
    for driver in (CudaDriver, HipDriver):
        try:
            return driver(None, device)
        except DriverNotFound as exc:
            errors.append(str(exc))
    raise DriverNotFound("no GPU driver library found: " + "; ".join(errors))


# -- the loaded kernel --------------------------------------------------------------------------
@dataclass
class BundledKernel:
    """One bundle binary, ready to launch: ``kernel[grid](*args)`` or ``kernel.launch(grid, *args)``."""
    manifest: dict
    target: str
    binary: bytes = field(repr=False)
    driver_library: str | None = None
    device: int = 0
    config: str | None = None   # the autotune config's key, for a bundle built with configs
    _driver: _Driver | None = field(default=None, repr=False)
    _function: object = field(default=None, repr=False)
    _scratch: dict = field(default_factory=dict, repr=False)   # hidden parameter -> (bytes, device pointer)

    @property
    def entry(self) -> dict:
        return manifest_entry(self.manifest, self.target, self.config)

    @property
    def configs(self) -> list[str]:
        """The keys of the bundle's autotune configs, in the module's order (none without configs)."""
        return [c["key"] for c in self.manifest.get("configs", [])]

    def load(self, driver: _Driver | None = None) -> None:
        """Load the binary into the current context (done at the first launch otherwise)."""
        e = self.entry
        if e["num_ctas"] != 1 or e["launch_cooperative_grid"] or e["launch_pdl"]:
            raise BundleError(f"{e['name']} [{self.target}]: clusters (num_ctas={e['num_ctas']}), cooperative grids "
                              "and PDL launches are not supported by the bundle loader yet")
        self._driver = driver or DRIVERS[self.entry["backend"]](self.driver_library, self.device)
        self._function = self._driver.load(self.binary, self.entry["name"], self.entry["shared"])

    def __getitem__(self, grid):
        return lambda *args, stream=None: self.launch(grid, *args, stream=stream)

    def launch(self, grid, *args, stream: int | None = None) -> None:
        """Launch on ``grid`` (checked against the backend's limits, ``scheduler.grid``); a grid
        with a 0 dimension launches nothing, as Triton's launcher does."""
        e = self.entry
        grid = check_grid(grid, e["backend"], e["warp_size"] * e["num_warps"], self.manifest["kernel"])
        values = self.pack(args)
        if 0 in grid:
            return
        if self._function is None:
            self.load()
        values += [ffi.new("uint64_t *", self._scratch_pointer(which, grid))
                   for which in ("global", "profile")[:self.entry["hidden_params"]]]
        params = ffi.new("void *[]", [ffi.cast("void *", v) for v in values])   # `values` owns the storage
        self._driver.launch(self._function, grid, e["warp_size"] * e["num_warps"], e["shared"],
                            _current_stream() if stream is None else stream, params)

    def pack(self, args: tuple) -> list:
        """C values for ``args`` per the manifest's parameter types; raises ``ArgumentError``."""
        params = self.manifest["params"]
        if len(args) != len(params):
            names = ", ".join(p["name"] for p in params)
            raise ArgumentError(f"{self.manifest['kernel']} takes {len(params)} arguments ({names}); got {len(args)}")
        return [_pack(p["name"], p["type"], a) for p, a in zip(params, args)]

    def _scratch_pointer(self, which: str, grid: tuple) -> int:
        """Triton's per-program scratch buffers, grown as needed; null where a kernel uses none."""
        e = self.entry
        nbytes = e[f"{which}_scratch_size"] * grid[0] * grid[1] * grid[2] * e["num_ctas"]
        if nbytes and self._scratch.get(which, (0, 0))[0] < nbytes:
            self._scratch[which] = (nbytes, self._driver.alloc(nbytes))
        return self._scratch[which][1] if nbytes else 0


def _pack(name: str, ty: str, value):
    if ty.startswith("*"):
        return ffi.new("uint64_t *", _pointer(name, ty, value))
    if ty not in SCALARS:
        raise ArgumentError(f"{name}: parameter type {ty} is not supported by the bundle loader")
    integer = SCALARS[ty] not in ("float", "double")
    if isinstance(value, bool) and ty not in ("i1", "u1") or not isinstance(value, int if integer else (int, float)):
        raise ArgumentError(f"{name}: expected {'an int' if integer else 'a number'} for {ty}, got {type(value).__name__}")
    try:
        return ffi.new(SCALARS[ty] + " *", value)
    except OverflowError:
        raise ArgumentError(f"{name}: {value} does not fit {ty}") from None


def _pointer(name: str, ty: str, value) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 1 << 64:
            raise ArgumentError(f"{name}: {value} is not a 64-bit address")
        return value
    if not hasattr(value, "data_ptr"):
        raise ArgumentError(f"{name}: expected a GPU tensor or an integer address for {ty}, got {type(value).__name__}")
    expected = TORCH_DTYPES.get(ty[1:])
    dtype = str(getattr(value, "dtype", ""))
    if expected and dtype.startswith("torch.") and dtype != f"torch.{expected}":
        raise ArgumentError(f"{name}: {ty} expects a torch.{expected} tensor, got {dtype}")
    if getattr(value, "is_cuda", True) is False:
        raise ArgumentError(f"{name}: the tensor is on {getattr(value, 'device', 'the host')}; pass a GPU tensor")
    return value.data_ptr()


def _current_stream() -> int:
    """torch's current stream where torch is in use, else the default stream."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_stream().cuda_stream
    return 0


def manifest_entry(manifest: dict, target: str, config: str | None) -> dict:
    """The manifest's record of one binary: the target's, or its config's."""
    entry = manifest["targets"][target]
    return entry if config is None else entry["configs"][config]


def select_config(manifest: dict, wanted: str | dict | None) -> str | None:
    """The key of the autotune config to launch: ``wanted`` itself (a key), the one config whose
    values include every item of a ``wanted`` dict (``{"BLOCK": 1024}``), or the first listed
    (the module's first) when nothing is asked for. None for a bundle built without configs."""
    configs, kernel = manifest.get("configs", []), manifest["kernel"]
    if not configs:
        if wanted is not None:
            raise BundleError(f"bundle '{kernel}' was built without autotune configs; load it without config=")
        return None
    if wanted is None:
        return configs[0]["key"]
    if isinstance(wanted, str):
        found = [c for c in configs if c["key"] == wanted]
    else:
        found = [c for c in configs if all(c["values"].get(k, object()) == v for k, v in wanted.items())]
    if len(found) != 1:
        have = "; ".join(c["key"] for c in configs)
        raise BundleError(f"bundle '{kernel}' has {'no' if not found else len(found)} autotune config(s) matching "
                          f"{wanted!r}; it has: {have}")
    return found[0]["key"]


def load_bundle(path, *, config: str | dict | None = None, arch: str | None = None, device: int = 0,
                driver_library: str | None = None, trusted_keys=None, kernel=None) -> BundledKernel:
    """Load the bundle at ``path`` (folder or zip) for GPU ``device``.

    ``config`` picks one of the autotune configs a bundle was built with (``select_config``: a
    key, or a dict of values; the first config by default). ``arch`` (``sm_90``, ``gfx942``)
    picks a binary without asking a driver, for inspection or to prepare a launch; the driver
    is then opened at the first launch. ``driver_library`` replaces the default
    ``libcuda.so.1`` / ``libamdhip64.so``. ``trusted_keys`` (a public key file, ``str`` or
    ``Path``, PEM bytes or an ``Ed25519PublicKey``, or a list of them) makes the loader refuse a
    bundle that none of them signed, that changed since, or whose folder or archive is not named
    for the kernel it was signed for (``UntrustedBundle``). ``kernel`` pins what the caller
    expects: a kernel name, or the JIT function itself, whose source hash must match too (so a
    signed bundle of older source is refused). Every other refusal is a ``BundleError`` (a
    ``ValueError`` for a bad key) naming what is wrong.
    """
    bundle = read_bundle(path, trusted_keys, kernel)
    manifest = bundle.manifest
    key = select_config(manifest, config)
    driver = None if arch is not None else open_driver(driver_library, device)
    target = select_target(manifest["targets"], arch or driver.arch, manifest["kernel"])
    entry = manifest_entry(manifest, target, key)
    binary = bundle.read(entry["file"])
    actual = hashlib.sha256(binary).hexdigest()
    if actual != entry["sha256"]:
        raise HashMismatch(f"{bundle.path}: {entry['file']} has sha256 {actual}, the manifest says {entry['sha256']}; "
                           "the bundle is damaged or was edited, rebuild it")
    check_binary(binary, entry, str(bundle.path), manifest["params"])
    loaded = BundledKernel(manifest, target, binary, driver_library, device, key)
    if driver is not None:
        loaded.load(driver)
    return loaded

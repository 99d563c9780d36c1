"""portkern.Error and its subclasses, one per pk_status of the C library.

Every failure of a library call raises the subclass of its status; the instance carries
  status  the pk_status code (int, negative),
  name    its symbolic name ("PK_EINVAL"),
  text    the generic text (pk_strerror: "invalid argument"),
  detail  pk_last_error(): which argument or device call failed ("nx: must be >= 1, got 0"),
  where   the Python call that failed ("diffusion3d").
Errors about arguments (EINVAL, ENULL, ESIZE, EOVERFLOW, ENONFINITE, ENOVARIANT, EDTYPE)
are also ValueErrors, the two out-of-memory ones MemoryErrors and EIO an OSError, so
generic handlers catch them too.  Array checks made before the library is called raise
plain TypeError / ValueError naming the argument.
"""


class Error(Exception):
    """A libportkern call failed (see the module docstring for the attributes)."""

    status = None
    name = None

    def __init__(self, message, status=None, name=None, text=None, detail=None, where=None):
        super().__init__(message)
        if status is not None:
            self.status = status
        if name is not None:
            self.name = name
        self.text = text
        self.detail = detail
        self.where = where


class InvalidArgumentError(Error, ValueError):
    """PK_EINVAL: invalid argument."""


class NullPointerError(Error, ValueError):
    """PK_ENULL: a NULL pointer reached the library."""


class SizeError(Error, ValueError):
    """PK_ESIZE: zero, negative or out-of-range size."""


class SizeOverflowError(Error, ValueError):
    """PK_EOVERFLOW: a size overflows the address space."""


class NonFiniteError(Error, ValueError):
    """PK_ENONFINITE: a non-finite parameter."""


class OutOfMemoryError(Error, MemoryError):
    """PK_ENOMEM: out of host memory."""


class DeviceMemoryError(Error, MemoryError):
    """PK_EDEVMEM: out of device memory."""


class NoBackendError(Error):
    """PK_ENOBACKEND: the backend is not available."""


class NoVariantError(Error, ValueError):
    """PK_ENOVARIANT: unknown variant."""


class NoDeviceError(Error):
    """PK_ENODEVICE: no such device."""


class BuildError(Error):
    """PK_EBUILD: a device program failed to build (the log is in .detail)."""


class DeviceError(Error):
    """PK_EDEVICE: a device runtime error."""


class InputOutputError(Error, OSError):
    """PK_EIO: input/output error."""


class FormatError(Error):
    """PK_EFORMAT: malformed or unsupported file."""


class DtypeError(Error, ValueError):
    """PK_EDTYPE: wrong data type or shape."""


class MismatchError(Error):
    """PK_EMISMATCH: arrays differ beyond tolerance."""


class UnsupportedError(Error):
    """PK_EUNSUPPORTED: the operation is not supported."""


class StateError(Error):
    """PK_ESTATE: an object used in the wrong state (a closed context or plan included)."""


class InternalError(Error):
    """PK_EINTERNAL: internal error."""


BY_NAME = {
    "PK_EINVAL": InvalidArgumentError,
    "PK_ENULL": NullPointerError,
    "PK_ESIZE": SizeError,
    "PK_EOVERFLOW": SizeOverflowError,
    "PK_ENONFINITE": NonFiniteError,
    "PK_ENOMEM": OutOfMemoryError,
    "PK_EDEVMEM": DeviceMemoryError,
    "PK_ENOBACKEND": NoBackendError,
    "PK_ENOVARIANT": NoVariantError,
    "PK_ENODEVICE": NoDeviceError,
    "PK_EBUILD": BuildError,
    "PK_EDEVICE": DeviceError,
    "PK_EIO": InputOutputError,
    "PK_EFORMAT": FormatError,
    "PK_EDTYPE": DtypeError,
    "PK_EMISMATCH": MismatchError,
    "PK_EUNSUPPORTED": UnsupportedError,
    "PK_ESTATE": StateError,
    "PK_EINTERNAL": InternalError,
}
for _name, _cls in BY_NAME.items():
    _cls.name = _name


def make(status, name, text, detail, where):
    """The exception for a failed call (used by the C extension)."""
    cls = BY_NAME.get(name, Error)
    msg = f"{where}: {name} ({text})" if where else f"{name} ({text})"
    if detail:
        msg += ": " + detail
    return cls(msg, status=status, name=name, text=text, detail=detail or "", where=where)

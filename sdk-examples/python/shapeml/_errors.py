"""The exception classes of the binding: one per status code of the C ABI,
and LibraryError for a library file that cannot be used. All are
shapeml.Error."""


class Error(RuntimeError):
    """A status from the library: `code` (stable number), `name`, `message`."""

    def __init__(self, code, name, message):
        super().__init__(f"{name}: {message}")
        self.code, self.name, self.message = code, name, message


class LibraryError(Error, OSError):
    """The file cannot be loaded, has no shapeml_get_api, or speaks another ABI
    (code -1: not a status of the library)."""

    def __init__(self, message):
        Error.__init__(self, -1, "LIBRARY_ERROR", message)

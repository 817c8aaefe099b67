"""The kernel language: the typed grammar, the immutable kernel, its evaluation, PSD check, library."""

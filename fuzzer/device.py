"""The device a case runs on, as one type: ``cpu``, ``cuda`` or ``cuda:N``.

A ``Device`` is a ``str`` (case files, tasks and JSON hold the name as it is) that knows what kind
of device it names: the one place that asks "is it CUDA?" (``is_cuda``) and "which type?"
(``type``: what a cause signature and the surface catalogue key on, never the GPU model).
"""

from __future__ import annotations

KINDS = ("cpu", "cuda")


class Device(str):
    """A device name; ``Device("cuda:1").type == "cuda"``."""

    __slots__ = ()

    @property
    def type(self) -> str:
        return self.split(":", 1)[0]

    @property
    def is_cuda(self) -> bool:
        return self.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.type == "cpu"

"""Type stubs of the native module ``ssdlab._core`` (checked against it by mypy.stubtest)."""

from typing import Any, Callable, Optional

from typing_extensions import final

__all__ = [
    "__version__",
    "Config",
    "ConfigError",
    "InputError",
    "SimulationError",
    "Simulation",
    "SsdlabError",
    "TraceError",
    "WorkloadError",
    "atc_study",
    "atc_synth_rings",
    "atc_synth_write",
    "bench_run",
    "bench_scenarios",
    "components",
    "preset_text",
    "presets_list",
]

__version__: str

class SsdlabError(Exception): ...
class ConfigError(SsdlabError): ...
class WorkloadError(SsdlabError): ...
class InputError(SsdlabError): ...
class TraceError(InputError): ...
class SimulationError(SsdlabError): ...

@final
class Config:
    def __new__(
        cls,
        base: Optional[str] = None,
        overrides: Optional[dict[str, Any]] = None,
        settings: list[tuple[str, str]] = ...,
        base_toml: Optional[str] = None,
    ) -> Config: ...
    def to_toml(self) -> str: ...
    def hash(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def seed(self) -> int: ...

@final
class Simulation:
    def __new__(cls, config: Config, keep_io_log: bool = False) -> Simulation: ...
    def run(self, progress: Optional[Callable[[float], Any]] = None) -> str: ...
    def summary(self) -> str: ...
    def progress(self) -> float: ...
    def io_log(self) -> Optional[dict[str, bytes]]: ...

def presets_list() -> list[tuple[str, str]]: ...
def preset_text(name: str) -> Optional[str]: ...
def components() -> list[str]: ...
def bench_scenarios() -> list[str]: ...
def bench_run(name: str, scale: float = 1.0) -> str: ...
def atc_study(
    stus: list[int],
    policies: list[str],
    assocs: list[int],
    lines: list[int],
    pins: list[tuple[int, int]],
    pin_tagged: bool,
    pin_dedicated: bool,
    seed: int,
    trace: Optional[str] = None,
    raw: Optional[bool] = None,
    skip_bad: bool = False,
    addresses: Optional[bytes] = None,
    synth: Optional[dict[str, Any]] = None,
) -> tuple[str, int]: ...
def atc_synth_rings(synth: dict[str, Any]) -> list[tuple[int, int, int]]: ...
def atc_synth_write(synth: dict[str, Any], path: str) -> int: ...

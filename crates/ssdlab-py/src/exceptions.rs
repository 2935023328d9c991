//! The Python exception tree, declared once. `ssdlab.exceptions` re-exports it.

use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(ssdlab, SsdlabError, PyException, "Base class of every error ssdlab raises.");
create_exception!(ssdlab, ConfigError, SsdlabError, "A configuration is invalid. `args[1]` lists every problem as dicts with `path`, `value` and `rule`.");
create_exception!(ssdlab, WorkloadError, SsdlabError, "A workload cannot be generated or read.");
create_exception!(ssdlab, InputError, SsdlabError, "A file given by the user cannot be read.");
create_exception!(ssdlab, TraceError, InputError, "A trace line is malformed (the message names file:line and the text).");
create_exception!(ssdlab, SimulationError, SsdlabError, "A model broke one of its invariants: a bug in ssdlab, please report it.");

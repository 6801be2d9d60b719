"""What a conformance worker runs inside a TVM venv, in parts the worker imports by path.

`worker.py` (the protocol loop) puts its own folder on `sys.path` and imports this package as
`casework`; tvmfork and its unit tests import it as `tvmfork.conformance.casework`. Its
modules use the standard library at import time and import numpy, torch, onnx and tvm inside
their functions, so each one is importable (and testable) without a TVM venv:

- `spec`: what the runner sends (the run's configuration, one case);
- `case`: a case in progress, its stages and the errors that end it;
- `compare`: results flattened to arrays and compared with the reference;
- `judge`: a call of a compiled case and what its outputs are held to, and the verdict,
  wherever the module ran;
- `bundle`: a case written for a device that has only TVM's runtime, and read back there;
- `pipe`: a serving process's next protocol line, and stopping it (the runner's and a
  bundle's runner's);
- `timing`: interleaved medians, shared with `scripts/`;
- `backends`: compiling for a target and running here, on an RPC device, into a bundle, or
  assembling only;
- `torch_route`, `onnx_route`: the two ways a model comes in;
- `onnx_cases`: ONNX's node conformance cases written out from the onnx wheel.
"""

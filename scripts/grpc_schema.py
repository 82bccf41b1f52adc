"""Compile A2A's gRPC protos into the descriptor sets a2ad loads (protocol/grpc_schema).

    .venv/bin/python scripts/grpc_schema.py                  # the protos kept there, compiled again
    .venv/bin/python scripts/grpc_schema.py --from ../shared/spec   # copy the spec's first

The spec names its files ``a2a-v1.0.proto`` and ``a2a-v0.3.proto``; protoc reads the dots
in a name as packages, so they are kept as ``a2a_v10.proto`` and ``a2a_v03.proto``. Each
set holds its file and every file it imports (google/api from googleapis-common-protos,
google/protobuf from grpcio-tools), so loading needs neither. Needs grpcio-tools (the dev
extra); tests/protocol/test_grpc_schema.py checks that the kept sets are what this makes.
"""

from __future__ import annotations

import argparse
import shutil
import site
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "src" / "a2ad" / "protocol" / "grpc_schema"
SPEC_NAMES = {"a2a_v10": "a2a-v1.0.proto", "a2a_v03": "a2a-v0.3.proto"}


def compile_set(proto: Path, out: Path) -> None:
    """Write ``proto``'s descriptor set, imports included, to ``out``; raises
    RuntimeError with protoc's complaint if it fails."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto
    includes = [f"-I{path}" for path in (*site.getsitepackages(), well_known)]
    args = ["protoc", f"-I{proto.parent}", *includes, "--include_imports"]
    code = protoc.main([*args, f"--descriptor_set_out={out}", proto.name])
    if code != 0:
        raise RuntimeError(f"protoc could not compile {proto} (exit {code})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="spec", type=Path, help="copy the protos from this folder")
    args = parser.parse_args()
    for name, spec_name in SPEC_NAMES.items():
        proto = HERE / f"{name}.proto"
        if args.spec is not None:
            shutil.copyfile(args.spec / spec_name, proto)
        with tempfile.TemporaryDirectory() as tmp:
            made = Path(tmp) / f"{name}.binpb"
            compile_set(proto, made)
            shutil.copyfile(made, HERE / f"{name}.binpb")
        print(f"{HERE / name}.binpb from {proto.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What variantlib 0.2.2 (scripts/variant-tools.sh) says of `split`'s wheel
variants (linker-tests/prune/split_installers.rs, issue #74).

  variant_check.py validate DIR NAME VERSION
      Each variant wheel in DIR: its name read by variantlib's wheel-name
      pattern, its `*.dist-info/variant.json` read by VariantDistInfo with
      the label of its name, and listed in RECORD with its true hash and
      size; `NAME-VERSION-variants.json` read by VariantsJson, with the same
      providers, priorities and variants as the index that variantlib's own
      `generate-index-json` writes from the wheels. Prints {label: [property,
      ...]} as JSON.
  variant_check.py resolve VARIANTS_JSON NAMESPACE VALUE
      The labels variantlib's resolver (get_variants_by_priority) picks,
      best first, on a machine whose stand-in provider plugin for NAMESPACE
      (`nvidia`: VALUE a compute capability X.Y; `amd`: VALUE a gfx name)
      says what NVIDIA's and AMD's providers would: neither is installable
      from PyPI, so the stand-ins answer in their place. Prints the labels
      as JSON.

Any disagreement raises (a traceback, exit 1).
"""

import base64
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

from variantlib.api import get_variants_by_priority
from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson

# The stand-in providers, imported by variantlib's plugin subprocess under
# the `plugin-api` names split writes: NVIDIA's offers, for a device X.Y
# (STAND_IN_SM), X{Y..0}_real and X0_virtual; AMD's, the gfx name
# STAND_IN_GFX. Each offers no config where its variable is unset.
STAND_INS = {
    "nvidia_variant_provider": """import os
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Config:
    name: str
    values: list = field(default_factory=list)
    multi_value: bool = True

def offered():
    sm = os.environ.get('STAND_IN_SM')
    if not sm:
        return []
    major, minor = sm.split('.')
    return [f'{major}{m}_real' for m in range(int(minor), -1, -1)] + [f'{major}0_virtual']

class NvidiaVariantPlugin:
    namespace = 'nvidia'

    @classmethod
    def get_all_configs(cls):
        return [Config('sm_arch', [f'{n}_{k}' for n in range(10, 200) for k in ('real', 'virtual')])]

    @classmethod
    def get_supported_configs(cls):
        return [Config('sm_arch', offered())] if offered() else []
""",
    "amd_variant_provider": """import os
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Config:
    name: str
    values: list = field(default_factory=list)
    multi_value: bool = True

def offered():
    gfx = os.environ.get('STAND_IN_GFX')
    return [gfx] if gfx else []

class AMDVariantPlugin:
    namespace = 'amd'

    @classmethod
    def get_all_configs(cls):
        return [Config('gfx_arch', offered())] if offered() else []

    @classmethod
    def get_supported_configs(cls):
        return [Config('gfx_arch', offered())] if offered() else []
""",
}


def record_rows(z, dist_info):
    rows = {}
    for line in z.read(dist_info + "/RECORD").decode().splitlines():
        name, digest, size = line.rsplit(",", 2)
        rows[name] = (digest, size)
    return rows


def variant_of(path, label):
    with zipfile.ZipFile(path) as z:
        found = [
            n
            for n in z.namelist()
            if n.count("/") == 1 and n.endswith(".dist-info/variant.json")
        ]
        assert len(found) == 1, (path, found)
        raw = z.read(found[0])
        info = VariantDistInfo(raw, label)
        digest = base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=")
        row = record_rows(z, found[0].split("/")[0]).get(found[0])
        assert row == ("sha256=" + digest.decode(), str(len(raw))), (path, row)
    return info


def same_index(a, b):
    def norm(v):
        return (
            v.namespace_priorities,
            {k: p for k, p in sorted(v.providers.items())},
            {k: sorted(p.to_str() for p in d.properties) for k, d in v.variants.items()},
        )

    assert norm(a) == norm(b), (norm(a), norm(b))


def validate(directory, name, version):
    directory = pathlib.Path(directory)
    labels = {}
    wheels = sorted(directory.glob("*.whl"))
    assert wheels, directory
    for w in wheels:
        m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(w.name)
        assert m is not None and m.group("variant_label"), w.name
        label = m.group("variant_label")
        info = variant_of(w, label)
        labels[label] = sorted(p.to_str() for p in info.variant_desc.properties)
    ours = VariantsJson(
        json.loads((directory / f"{name}-{version}-variants.json").read_bytes())
    )
    assert sorted(ours.variants) == sorted(labels), (list(ours.variants), labels)
    # variantlib's own index of the same wheels.
    with tempfile.TemporaryDirectory() as t:
        for w in wheels:
            shutil.copy(w, t)
        subprocess.run(
            [
                os.path.join(os.path.dirname(sys.executable), "variantlib"),
                "generate-index-json",
                "-d",
                t,
            ],
            check=True,
            capture_output=True,
        )
        made = list(pathlib.Path(t).glob("*-variants.json"))
        assert len(made) == 1, made
        theirs = VariantsJson(json.loads(made[0].read_bytes()))
    same_index(ours, theirs)
    print(json.dumps(labels, sort_keys=True))


def resolve(path, namespace, value):
    doc = json.loads(pathlib.Path(path).read_bytes())
    with tempfile.TemporaryDirectory() as t:
        for pkg, source in STAND_INS.items():
            d = pathlib.Path(t) / pkg
            d.mkdir()
            (d / "__init__.py").write_text("")
            (d / "plugin.py").write_text(source)
        os.environ["PYTHONPATH"] = t
        os.environ.pop("STAND_IN_SM", None)
        os.environ.pop("STAND_IN_GFX", None)
        os.environ[{"nvidia": "STAND_IN_SM", "amd": "STAND_IN_GFX"}[namespace]] = value
        picked = get_variants_by_priority(variants_json=doc)
    print(json.dumps([v.label for v in picked]))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"validate": validate, "resolve": resolve}[cmd](*args)

"""Helper of linker-tests/prune/split_conda.rs, run with the venv of
scripts/conda-tools.sh:

  conda_solve.py CHANNEL NAME
      indexes the local channel directory CHANNEL (its linux-64/ and
      noarch/) with py-rattler, then solves for the package NAME on
      linux-64 with the virtual packages the CONDA_OVERRIDE_* variables
      give (as conda reads them); prints the build string of the NAME
      picked, or `none` when no build of it can be installed
"""

import asyncio
import os
import sys


def solve(channel, name):
    import rattler
    from rattler.exceptions import SolverError
    from rattler.index import index_fs

    async def go():
        for subdir in ["linux-64", "noarch"]:
            os.makedirs(os.path.join(channel, subdir), exist_ok=True)
            await index_fs(channel, target_platform=rattler.Subdir(subdir), force=True)
        virtual = rattler.VirtualPackage.detect(rattler.VirtualPackageOverrides.from_env())
        url = "file://" + os.path.abspath(channel)
        try:
            records = await rattler.solve(
                sources=[rattler.Channel(url)],
                specs=[name],
                platforms=["linux-64", "noarch"],
                virtual_packages=virtual,
            )
        except SolverError:
            return "none"
        picked = [r.build for r in records if r.name.normalized == name]
        return picked[0] if picked else "none"

    print(asyncio.run(go()))


if __name__ == "__main__":
    solve(sys.argv[1], sys.argv[2])
    sys.stdout.flush()
    # py-rattler's runtime threads have crashed the interpreter's teardown
    # (about once in ten runs, after answering): leave without it.
    os._exit(0)

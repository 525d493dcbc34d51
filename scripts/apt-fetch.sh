# Sourced by the scripts that unpack one file of a Debian package without
# installing it (nvprune-tool.sh, roc-obj-tools.sh).
#
#   apt_fetch WORK SUITES COMPONENT PACKAGE=VERSION
#
# Downloads that package from deb.debian.org through a private apt
# configuration: a sources file for SUITES (space separated) and
# COMPONENT, with the package lists and cache under WORK (a scratch
# folder the caller removes), so the system's own apt state is neither read
# nor changed. Prints the path of the downloaded .deb.
apt_fetch() {
  local work=$1 suites=$2 component=$3 want=$4
  mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" \
    "$work/apt/parts" "$work/apt/debs"
  cat >"$work/apt/private.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suites
Components: $component
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  local opts=(
    -o "Dir::Etc::SourceList=$work/apt/private.sources"
    -o "Dir::Etc::SourceParts=$work/apt/parts"
    -o "Dir::State::Lists=$work/apt/lists"
    -o "Dir::Cache=$work/apt/cache"
    -o "Dir::State::Status=/var/lib/dpkg/status"
    -o "APT::Architecture=amd64"
    # Downloaded as the user running this (root in CI): apt's _apt
    # sandbox user could not write to the scratch folder.
    -o "APT::Sandbox::User=$(id -un)"
  )
  apt-get "${opts[@]}" update -q >/dev/null
  (cd "$work/apt/debs" && apt-get "${opts[@]}" download -q "$want" >/dev/null)
  local debs=("$work"/apt/debs/*.deb)
  if [ "${#debs[@]}" -ne 1 ] || [ ! -e "${debs[0]}" ]; then
    echo "apt_fetch: $want was not downloaded" >&2
    return 1
  fi
  printf '%s\n' "${debs[0]}"
}

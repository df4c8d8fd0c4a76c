# Sourced by bin/start and bin/test: make .venv and install a requirements file into it, once per
# change of that file (a stamp of its hash lives inside the venv).
# pip prints what it collects, downloads and installs (no --quiet): on a first run that takes a
# minute or so, and a silent terminal reads as a hang.
ongrid_venv() {
  local reqs="$1"
  local py="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    echo "Creating the virtualenv in .venv ..."
    "$py" -m venv .venv
  fi
  local want have stamp=".venv/.ongrid-$(basename "$reqs").sha256"
  want=$(cat "$reqs" requirements.txt | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    echo "Installing Python packages from $reqs (the first time takes a minute or two; pip's progress follows) ..."
    .venv/bin/pip install --disable-pip-version-check --progress-bar on -r "$reqs"
    echo "$want" > "$stamp"
    echo "Python packages installed."
  else
    echo "Python packages are up to date ($reqs)."
  fi
}

# One numbered line per step of bin/start, so a newcomer sees where it is and that it moves.
ongrid_step() {
  echo "==> [$1/$ONGRID_STEPS] $2"
}

# Compile the translation catalogs (locale/*.po → .mo, not committed; docs/i18n.md). They need GNU
# gettext's msgfmt; without it the interface is served in English and a note says how to fix it.
ongrid_compile_messages() {
  if command -v msgfmt >/dev/null 2>&1; then
    ONGRID_DATA_DIR="${ONGRID_DATA_DIR:-$(mktemp -d)}" \
      .venv/bin/python manage.py compilemessages -v 0 --ignore ".venv" --ignore "var"
  else
    echo "GNU gettext (msgfmt) is not installed: pages stay in English (apt-get install gettext)." >&2
  fi
}

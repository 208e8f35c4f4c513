# The two commands a user needs (see README):
#   make test    build the venv if needed, then run the test suite
#   make demo    build the venv if needed, then explain a sample decision
# Both install everything themselves from the pinned requirement files.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv test demo clean

venv: $(STAMP)

# Rebuilt whenever a requirement file or the package metadata changes.
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(VENV)/bin/smartcache explain examples/hotel-breakfast.json

clean:
	rm -rf $(VENV)

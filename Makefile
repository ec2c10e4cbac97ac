# Developer shortcuts. `make docs` builds the documentation site into
# site/ in strict mode (broken links and missing references fail).
PYTHON ?= .venv/bin/python

.PHONY: docs docs-serve test-docs

docs:
	$(PYTHON) -m mkdocs build --strict

docs-serve:
	$(PYTHON) -m mkdocs serve

test-docs:
	$(PYTHON) -m pytest tests/docs -q

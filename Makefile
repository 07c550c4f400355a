# Thin wrappers around dev.py (which needs only Python >= 3.11).
.PHONY: demo test slow lint
demo:
	python3 dev.py demo
test:
	python3 dev.py test
slow:
	python3 dev.py slow
lint:
	.venv/bin/ruff check .

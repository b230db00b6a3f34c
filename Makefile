# Entry points. Each installs what it needs first (tools/setup.sh is quick when nothing changed).
.PHONY: setup run demo test bench lint clean

setup:
	@tools/setup.sh

run: setup
	@tools/run.sh

demo: setup
	@tools/run.sh --demo rock

test:
	@tools/test.sh

bench: setup
	@tools/bench.sh

lint: setup
	@.venv/bin/ruff check .
	@.venv/bin/ruff format --check .

clean:
	rm -rf build install log .stamps

# Entry points. Each installs what it needs first (tools/setup.sh is quick when nothing changed).
.PHONY: setup run demo test test-cores bench lint clean

setup:
	@tools/setup.sh

run: setup
	@tools/run.sh

demo: setup
	@tools/run.sh --demo rock

test:
	@tools/test.sh

# The ROS-free cores' tests on another Python without ROS: make test-cores PY=3.10
PY ?= 3.10
test-cores:
	@tools/test_cores.sh $(PY)

bench: setup
	@tools/bench.sh

lint: setup
	@.venv/bin/ruff check .
	@.venv/bin/ruff format --check .

clean:
	rm -rf build install log .stamps

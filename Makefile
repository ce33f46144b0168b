# Local entry points. `make check` runs exactly what CI runs (.ci/run -> scripts/test.sh); the gate
# commands themselves live in scripts/test.sh, so this file and CI cannot drift apart.

.PHONY: build gates test check bench blessed-headers

build:
	bash scripts/test.sh build

# cargo fmt --check; clippy -D warnings; crate dependency rules (ARCHITECTURE.md §2); C headers in
# sync; ruff and mypy on the Python code.
gates:
	bash scripts/test.sh fmt clippy deps headers python

# Builds first: the tests load the plugin .so files from target/debug.
test:
	bash scripts/test.sh build test

# The one local command: setup, build, gates, tests.
check:
	bash scripts/test.sh

bench:
	cargo bench -p tomii-bench

# Rewrites tomii-types/include/tomii/{common,scheduler,kernel}.h from tomii-types/src/abi.
blessed-headers:
	TOMII_BLESS=1 cargo test -p tomii-types --test headers

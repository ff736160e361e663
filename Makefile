# Mneme: the two entry points are `make demo` and `make test`; both set up a fresh machine first.
BUILD_DIR ?= build
JOBS ?= 2
PREFIX ?= /usr/local

.PHONY: all deps node-deps configure build demo test bench install package check-packages clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ]; then \
	  cmake -S . -B $(BUILD_DIR) -G "$(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" -DCMAKE_BUILD_TYPE=Release \
	    $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo builds what it runs (the libraries, the plugins, the command line and two examples), not
# the test suite.
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme_demo
	$(BUILD_DIR)/bin/standalone_memory
	@echo
	$(BUILD_DIR)/bin/research_crew

# The Node.js packages the MCP and REST tests talk to (pinned by tests/mcp/package-lock.json); the
# only step of `make test` that uses the network, and only when the lock file changed.
node-deps:
	@bash scripts/install-node-deps.sh $(BUILD_DIR)

test: build node-deps
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --label-exclude slow

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme-bench
	$(BUILD_DIR)/bin/mneme-bench

install: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme_installable
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# Debian packages in $(BUILD_DIR)/packages: libmneme<version>, libmneme-dev, mneme.
package: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme_installable
	cd $(BUILD_DIR) && cpack --config CPackConfig.cmake

# Installs the packages on this machine (root), checks them as a user would, and removes them.
check-packages: package
	bash scripts/check-packages.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)

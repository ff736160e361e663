# Mneme: the two entry points are `make demo` and `make test`; both set up a fresh machine first.
BUILD_DIR ?= build
JOBS ?= 2

.PHONY: all deps configure build demo test bench clean

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

demo: build
	$(BUILD_DIR)/bin/standalone_memory
	@echo
	$(BUILD_DIR)/bin/research_crew

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --label-exclude slow

bench: build
	$(BUILD_DIR)/bin/mneme-bench

clean:
	rm -rf $(BUILD_DIR)

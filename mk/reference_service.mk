# OCR reference service (reference_service/): its own virtual environment, serve, checks.
# Included from the main Makefile; also usable alone: make -f mk/reference_service.mk serve
REF_PYTHON ?= python3.11
REF_VENV := reference_service/.venv
REF_PY := $(REF_VENV)/bin/python
REF_HTTP_PORT ?= 8080
REF_TRITON_HTTP_PORT ?= 8000
REF_TRITON_GRPC_PORT ?= 8001
REF_TRITON_METRICS_PORT ?= 8002
# Debian packages: fonts for the golden set, tesseract for the peer benchmark, redis for
# the cache test.
REF_APT_PACKAGES := fonts-dejavu-core fonts-liberation fonts-noto-core tesseract-ocr tesseract-ocr-eng redis-server

.PHONY: reference-venv reference-int8 reference-apt serve reference-golden reference-test bench-ocr bench-ocr-ablation bench-ocr-avx2-guest reference-avx2-guest-check reference-verify-rollback reference-gpu-prepare

# Idempotent: rebuilt only when requirements.txt is newer than the venv's stamp.
reference-venv: $(REF_VENV)/.installed

$(REF_VENV)/.installed: reference_service/requirements.txt reference_service/requirements-torch.txt
	test -x $(REF_PY) || $(REF_PYTHON) -m venv $(REF_VENV)
	$(REF_PY) -m pip install --quiet --upgrade pip
	# One resolution with numpy<2 (PyTriton 0.7 needs it; opencv-python 4.11 accepts it).
	$(REF_PY) -m pip install --quiet -r reference_service/requirements.txt
	$(REF_PY) -m pip install --quiet --no-deps -r reference_service/requirements-torch.txt
	touch $@

# int8 models for CPUs without bf16 (runtimes.choose_precision): NNCF post-training
# quantisation of the shipped ONNX files on generated pages (reference_service/quantise.py),
# ~1.5 min of CPU once, cached outside the clone in ~/.cache/archkit/ocr-int8/ ($OCR_INT8_DIR).
# A SHA-256 other than the pinned one is reported, not fatal: NNCF's statistics come from
# float inference, whose last bits depend on the CPU's kernels.
reference-int8: reference-venv
	$(REF_PY) -m reference_service quantise --if-missing

reference-apt:
	apt-get install -y --no-install-recommends $(REF_APT_PACKAGES)

# The whole service in the foreground on 127.0.0.1; Ctrl-C or SIGTERM stops it.
serve: reference-venv
	$(REF_PY) -m reference_service serve --http-port $(REF_HTTP_PORT) \
	  --triton-http-port $(REF_TRITON_HTTP_PORT) --triton-grpc-port $(REF_TRITON_GRPC_PORT) \
	  --triton-metrics-port $(REF_TRITON_METRICS_PORT)

reference-golden: reference-venv
	$(REF_PY) -m reference_service golden
	$(REF_PY) -m reference_service golden --hard

reference-test: reference-venv
	.venv/bin/pytest tests/reference_service -m "live or not live"

bench-ocr: reference-venv
	$(REF_PY) bench/bench_ocr.py --write docs/benchmarks.md

# Each change alone and combined, one service per configuration (about 15 minutes on 2 cores).
bench-ocr-ablation: reference-venv
	$(REF_PY) bench/bench_ocr.py --ablation --write docs/benchmarks.md

# Issue 34's AVX2-only CPU where none is at hand: a QEMU guest with CPU model EPYC-Rome (AVX2,
# no AVX-512), the host's / read-only over 9p (bench/avx2_guest.sh; apt qemu-system-x86 and
# busybox-static). With KVM it runs at the host's speed, so the benchmark is meaningful; the
# script refuses a KVM that offers guests no AVX2 (a nested PVM hypervisor does not). Under
# TCG (AVX2_GUEST_ACCEL=tcg) the CPU is emulated: the check's outputs are real, its times not.
AVX2_GUEST_ACCEL ?= kvm
AVX2_GUEST_OUT := out/avx2-guest
bench-ocr-avx2-guest: reference-venv
	mkdir -p $(AVX2_GUEST_OUT)
	bench/avx2_guest.sh --out $(AVX2_GUEST_OUT) -- $(REF_PY) bench/bench_ocr.py --rounds 2 --latency-images 5 --no-inproc --json $(AVX2_GUEST_OUT)/bench.json
	$(REF_PY) bench/bench_ocr.py --from-json $(AVX2_GUEST_OUT)/bench.json --write docs/benchmarks.md

reference-avx2-guest-check: reference-venv
	mkdir -p $(AVX2_GUEST_OUT)
	bench/avx2_guest.sh --accel $(AVX2_GUEST_ACCEL) --out $(AVX2_GUEST_OUT) -- $(REF_PY) bench/avx2_guest_check.py --json $(AVX2_GUEST_OUT)/check.json

# cp312 wheels for the GPU machine, in two parts that each travel with one device call.
reference-gpu-prepare: reference-venv
	reference_service/scripts/gpu_run.sh prepare

reference-verify-rollback:
	$(REF_PY) -m reference_service verify-rollback --url http://127.0.0.1:$(REF_HTTP_PORT) \
	  --triton-url http://127.0.0.1:$(REF_TRITON_HTTP_PORT)

"""What every engine object is made of: its resolved limits on one GPU (`EngineProfile`), its flag table
(`FlagTable`: scenario field <-> command-line flag, read and written by the same rows) and the object that
joins them (`Engine`).

Light on purpose (pydantic and the standard library only): `validate` reads the flag tables on machines that
have no sympy or pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EngineProfile(BaseModel):
    """An engine's scheduler limits and memory rule on one GPU, as the capacity model uses them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    gpu_memory_utilization: float = Field(gt=0, le=1, description="the memory fraction; what it multiplies is "
                                                                  "`memory_fraction_of`")
    memory_fraction_of: Literal["total", "free_after_weights"] = Field(
        "total", description="total: KV = usable × fraction − weights − activations − non-torch − graphs (vLLM, "
                             "SGLang); free_after_weights: KV = fraction × (usable − weights − activations − "
                             "non-torch − graphs) (TensorRT-LLM's kv_cache_free_gpu_memory_fraction)")
    max_num_batched_tokens: int = Field(gt=0, description="token budget per step (chunked prefill)")
    max_num_scheduled_tokens: int | None = Field(None, gt=0, description="the scheduler's own cap on tokens per step "
                                                 "when below the budget (vLLM with a draft model); None: the budget")
    max_num_seqs: int = Field(gt=0)
    block_size_tokens: int = Field(gt=0)
    non_torch_bytes: float = Field(ge=0, description="CUDA context growth, cuBLAS/NCCL workspaces counted by the profiler")
    cuda_graph_bytes: float = Field(ge=0, description="memory taken by captured CUDA graphs before KV allocation")
    activation_bytes_per_token: float = Field(ge=0, description="multiplier on the profile run's per-token forward activation "
                                                                 "estimate (capacity.model.memory.activation_peak_bytes)")
    sampler_copies: float = Field(ge=0, description="fp32 logits-sized buffers per request alive in the full sampler warm-up")
    moe_activation_factor: float = Field(ge=0, description="multiplier on the fused-MoE workspace the profile run keeps "
                                                           "(capacity.model.memory.moe_workspace_bytes; 1 = as the engine sizes it)")
    moe_cuda_graph_bytes: float = Field(0.0, ge=0, description="CUDA-graph estimate subtracted from the KV budget for MoE models "
                                                               "that are not profiled on the lean path")
    lean_moe_architectures: tuple[str, ...] = Field((), description="MoE architectures profiled like dense models (lean "
                                                                     "sampler, no CUDA-graph estimate); dense models always are")
    lean_sampler_copies: float = Field(0.0, ge=0, description="fp32 logits-sized buffers per request alive in the lean "
                                                              "sampler warm-up")
    sampler_scratch_rows: int = Field(0, ge=0, description="vocab-wide fp32 rows of scratch the full sampler warm-up keeps")
    spec_draft_rows: int = Field(0, ge=0, description="vocab-wide fp32 rows per request the speculative sampler's "
                                 "warm-up adds (vLLM's V1 runner: one per draft token)")
    profile_overhead_bytes: float = Field(0.0, ge=0, description="fixed bytes the profile run adds to its peak")
    embedding_copy: bool = Field(False, description="the profile window also holds a bf16 copy of the token-embedding "
                                 "table beside the first layer's outputs (vLLM 0.26's cold compile; "
                                 "capacity.model.memory.embedding_copy_bytes)")
    mla_profile_buffer: bool = Field(False, description="MLA layers allocate a worst-case up-projected prefill context "
                                     "in the profile run (vLLM; capacity.model.memory.mla_profile_bytes)")
    max_cudagraph_tokens: int = Field(512, ge=0, description="steps with more tokens run without CUDA graphs")
    max_prefill_graph_tokens: int | None = Field(None, ge=0, description="steps carrying a prompt chunk run graphed up "
                                                 "to this many tokens (SGLang's prefill graphs); None: the one graph "
                                                 "limit of every step (max_cudagraph_tokens; vLLM)")
    in_flight_batches: int = Field(2, ge=1, description="batches scheduled but not finished (async scheduling: 2); "
                                   "a sliding-window group may hold window − 1 + this × token budget tokens")
    reserve_output_at_admission: bool = Field(False, description="a request is admitted only when its whole final "
                                              "length fits beside the running requests' (SGLang, TensorRT-LLM's "
                                              "GUARANTEED_NO_EVICT); False: when its prompt's blocks are free (vLLM)")
    preempts: bool = Field(True, description="running requests are preempted when the KV pool fills (vLLM recomputes "
                           "them, SGLang retracts them); False: never (TensorRT-LLM's GUARANTEED_NO_EVICT, which "
                           "reserves every request's whole length at admission)")
    recv_interval_steps: int = Field(1, ge=1, description="new requests are taken off the socket only every this "
                                     "many decode steps while a batch runs; a step with a prompt chunk lets the next "
                                     "iteration take them at once (SGLang's --scheduler-recv-interval; 1: every step)")
    mixed_prefill: bool = Field(True, description="prefill chunks ride in decode steps (vLLM); False: a prefill "
                                                  "batch runs alone while running sequences wait (SGLang's default)")
    lean_profile_run: bool = Field(True, description="False: every model is profiled on the full path (vLLM's V1 model "
                                                     "runner: full sampler warm-up, CUDA-graph estimate subtracted)")
    draft_forward_host_s: float = Field(0.0, ge=0, description="a draft model's CPU work per forward besides its "
                                        "op-by-op launches (vLLM's V1 drafter); the GPU runs behind it")
    draft_layer_launch_s: float = Field(0.0, ge=0, description="a draft model's CPU launch per layer of each forward "
                                        "(the drafter's own, not the target's eager floor)")
    async_scheduling: bool = Field(True, description="the CPU schedules and prepares step n+1 while the GPU runs step n; "
                                                     "False: that work (exposed_step_host_s) is added to every step")
    exposed_step_host_s: float = Field(0.0, ge=0, le=1, description="the CPU's work per step (schedule, prepare inputs, "
                                                                    "process outputs) paid when async scheduling is off")

    op_by_op_priced: bool = Field(True, description="a step beyond the CUDA graphs pays the calibration's op-by-op "
                                  "launch costs (vLLM 0.26's, measured here: eager_*_overhead_s); False: the engine's "
                                  "own op-by-op cost is unmeasured and taken as hidden under the GPU step")
    prefill_graphs_skip_mla: bool = Field(False, description="the engine's prefill graphs are off for MLA models "
                                          "(SGLang 0.5.17's breakable backend): their prompts run op by op")
    prefill_graphs_nvidia_only: bool = Field(False, description="the engine's prefill graphs are off on other GPUs "
                                             "than NVIDIA's (SGLang 0.5.17 on ROCm)")
    api_server_count: int = Field(1, ge=1, le=64, description="front-end processes that take requests and stream "
                                  "tokens to clients (vLLM --api-server-count)")
    engine_core_host_share: float = Field(1.0, gt=0, le=1, description="the share of the host floor per sequence "
                                          "(host_token_s, fitted with one front-end process) that stays in the "
                                          "engine core when more front-end processes share the streaming; 1: more "
                                          "front ends do not lower it")

    refuses_kv_below_max_len_request: bool = Field(False, description="the engine refuses to start when its KV "
                                                   "cache cannot hold one request of max_model_len tokens (vLLM's "
                                                   "_check_enough_kv_cache_memory, vllm/v1/core/kv_cache_utils.py); "
                                                   "False: no such start-up check is known")

    running_limit_per_batch: bool = Field(False, description="under pipeline parallelism max_num_seqs bounds each "
                                          "batch in flight (TensorRT-LLM's max_batch_size per micro-batch); False: "
                                          "all running requests together (vLLM, SGLang)")

    running_limit_per_rank: bool = Field(False, description="under attention data parallel max_num_seqs and the token "
                                         "budget bound each rank (TensorRT-LLM's max_batch_size and max_num_tokens, "
                                         "vLLM's engine core per DP rank); False: the replica's requests together")

    @property
    def steps_scheduled_ahead(self) -> int:
        """Steps a busy engine has already scheduled when a new request arrives: with async scheduling the CPU
        schedules step n + 1 as step n starts, so an arrival during step n is first seen for step n + 2 (one step
        later than a synchronous scheduler); without it, none. One at most: the closed forms and the step simulator
        (which keeps only the last step's start) both read it, so they agree by construction."""
        return 1 if self.async_scheduling and self.in_flight_batches > 1 else 0

    @property
    def host_floor_scale(self) -> float:
        """What the host floor per sequence is of the one-front-end floor the calibration fitted: the engine core
        and its front-end processes run side by side, so the slower sets the pace: max(the engine core's share,
        1 / the front-end processes)."""
        return max(self.engine_core_host_share, 1.0 / self.api_server_count)

    def lane_running_limit(self, pp: int = 1, dp_ranks: int = 1) -> int:
        """The running limit of one of the pp batches a pipeline keeps in flight, with attention data parallel over
        `dp_ranks` GPUs (1: none)."""
        limit = self.max_num_seqs * self.rank_multiple(dp_ranks)
        return limit if self.running_limit_per_batch or pp == 1 else max(1, -(-limit // pp))

    def rank_multiple(self, dp_ranks: int = 1) -> int:
        """How many times its per-engine limits (max_num_seqs, the token budget) a replica with attention data
        parallel over `dp_ranks` GPUs (1: none) schedules at once: each rank its own where they are per rank."""
        return dp_ranks if self.running_limit_per_rank else 1

    def scheduled_tokens(self, dp_ranks: int = 1) -> int:
        """Tokens one step of a lane schedules (the scheduler's own cap where it has one, else the budget), per rank
        where the limits are per rank."""
        return (self.max_num_scheduled_tokens or self.max_num_batched_tokens) * self.rank_multiple(dp_ranks)

    def budget_bytes(self, usable_bytes: float) -> float:
        """The memory the fraction is taken of, times the fraction (the 'budget' of the fit message)."""
        return usable_bytes * self.gpu_memory_utilization if self.memory_fraction_of == "total" else usable_bytes

    def kv_cache_bytes(self, usable_bytes: float, weight_bytes: float, activation_bytes: float,
                       graph_bytes: float) -> float:
        """KV memory per GPU by this engine's memory rule (`memory_fraction_of`); may be negative (does not fit)."""
        if self.memory_fraction_of == "total":
            return (usable_bytes * self.gpu_memory_utilization - weight_bytes - activation_bytes
                    - self.non_torch_bytes - graph_bytes)
        free = usable_bytes - weight_bytes - activation_bytes - self.non_torch_bytes - graph_bytes
        return free * self.gpu_memory_utilization


def no_scenario(_text: str) -> dict[str, Any]:
    """A flag that does not change the prediction (dtype, data parallel size, ...)."""
    return {}


@dataclass(frozen=True)
class Flag:
    """One row of an engine's flag table: an engine option, its command-line flag, and how its value reads back
    into Scenario fields (`read`) and is written from them (`write`).

    `option` names the value in the engine's own terms (validate's EngineConfig fields, the launch snippets);
    `meaning` says what the number means in this engine (units differ between engines under one field).
    A `switch` takes no value: present when the option is true; `read` then gets ''.
    """

    option: str
    flag: str
    meaning: str
    read: Callable[[str], dict[str, Any]] = no_scenario
    write: Callable[[Mapping[str, Any]], Any] | None = None
    aliases: tuple[str, ...] = ()
    switch: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases)


def argv_value(argv: list[str], *flags: str) -> str | None:
    """The value of the first of `flags` in a command line ('--flag value' or '--flag=value')."""
    for i, a in enumerate(argv):
        for flag in flags:
            if a == flag and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(flag + "="):
                return a.split("=", 1)[1]
    return None


@dataclass(frozen=True)
class FlagTable:
    """An engine's flags, used in both directions: options -> argv, argv -> Scenario fields."""

    rows: tuple[Flag, ...] = ()

    @property
    def options(self) -> frozenset[str]:
        return frozenset(r.option for r in self.rows)

    def row(self, option: str) -> Flag | None:
        return next((r for r in self.rows if r.option == option), None)

    def argv(self, values: Mapping[str, Any]) -> list[str]:
        """['--flag', 'value', ...] for the options that are set (None: left to the engine), in table order.
        An option this engine has no flag for raises KeyError (the caller says why in its own terms)."""
        unknown = [k for k, v in values.items() if v not in (None, False) and k not in self.options]
        if unknown:
            raise KeyError(", ".join(unknown))
        out: list[str] = []
        for r in self.rows:
            value = values.get(r.option)
            if value is None or value is False:
                continue
            out += [r.flag] if r.switch else [r.flag, str(value)]
        return out

    def options_for(self, scenario: Mapping[str, Any]) -> dict[str, Any]:
        """This engine's option values for a configuration given as Scenario fields (the launch snippets)."""
        return {r.option: r.write(scenario) for r in self.rows if r.write is not None}

    def sets(self, field: str, value: Any) -> bool:
        """Whether this engine has a flag for the Scenario field at this value: written and read back unchanged."""
        return self.scenario(self.argv(self.options_for({field: value}))).get(field) == value

    def scenario(self, argv: list[str]) -> dict[str, Any]:
        """The Scenario fields an engine command line sets, read back through the same rows (later rows win)."""
        out: dict[str, Any] = {}
        for r in self.rows:
            if r.switch:
                if any(a in r.names for a in argv):
                    out.update(r.read(""))
            elif (text := argv_value(argv, *r.names)) is not None:
                out.update(r.read(text))
        if out.get("pp", 1) > 1:  # a replica is tp × pp GPUs
            out["num_gpus"] = out.get("tp", 1) * out["pp"]
        if out.get("attention_dp"):  # the data-parallel size is the attention's, not replicas
            out.pop("data_parallel_size", None)
        return out


def _no_profile(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    raise NotImplementedError


@dataclass(frozen=True)
class Engine:
    """One engine: its limits per GPU (computed by `limits`), its memory rule and scheduling regime (in the
    profile it returns) and its flag table."""

    name: str
    title: str
    flags: FlagTable
    # (GPU memory or None, TP, the overrides that are set) -> the defaults; an override can change a default that
    # follows from it (SGLang's memory fraction from its chunk size, vLLM's largest graph from its sequence limit)
    limits: Callable[[float | None, int, Mapping[str, Any]], EngineProfile] = field(default=_no_profile)
    source: str = ""
    # (Scenario, GPU spec, model architecture) -> the parts of this configuration the model does not price, each in
    # words (the accuracy card reports them as unsupported features); none by default
    unpriced: Callable[[Any, Any, Any], list[str]] = field(default=lambda _s, _gpu, _model: [])

    def profile(self, gpu_memory_bytes: float | None = None, tp: int = 1, **overrides: Any) -> EngineProfile:
        """The limits on a GPU of `gpu_memory_bytes` at this TP (None: the engine's reference GPU); overrides
        (None = keep) come last; the defaults that follow from them are computed with them."""
        clean = {k: v for k, v in overrides.items() if v is not None}
        base = self.limits(gpu_memory_bytes, tp, clean)
        own = {k: v for k, v in clean.items() if k in EngineProfile.model_fields}  # others only inform `limits`
        return base.model_copy(update=own) if own else base

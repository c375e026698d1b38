"""Why each expected signal moves as far as its thresholds say: the physics the simulation
follows, written into every manifest entry's `why`."""

from __future__ import annotations

# Why each threshold is what it is (the physics the simulation follows).
QUEUE_GROWS = (
    "offered load is about twice what the replicas can serve, so the queue grows "
    "for the whole window: waiting requests go from none or a few to dozens"
)
QUEUE_WAIT = (
    "an FCFS queue fed about twice its service rate grows all window: the mean wait "
    "reaches hundreds of milliseconds within minutes, against milliseconds before"
)
TTFT_QUEUE = "TTFT contains the queue wait, so it grows by at least as much"
SURGE_PROMPT = (
    "5-12 % of requests become ~12k-token prompts against a mix averaging 3-4k; "
    "bursts of short chat requests dilute them, so the mean rises by a tenth or more"
)
SURGE_PREFILL = "prefill time grows with prompt length (compute-bound chunks)"
SURGE_ITL = (
    "decodes share each step's token budget with long prefill chunks, so every step "
    "and every inter-token gap gets longer"
)
KV_FULL = (
    "the batch job's sequences need more KV than the cache holds: usage sits near 1, "
    "against well under half before"
)
KV_PREEMPT = "decode growth runs out of KV blocks, so the scheduler preempts: from none to many"
KV_WAIT = "requests whose prompt's KV does not fit wait for space (reason capacity)"
KV_TPOT = (
    "bigger batches of long contexts make each decode step slower, and a preempted "
    "request's recompute shows as one long gap"
)
RESTART_UP = "a restarting process refuses connections while it loads weights (a minute or more)"
RESTART_START = "each new process has a new start time"
RESTART_RESET = "a new process counts from zero"
RESTART_HITS = (
    "a restarted engine's prefix cache starts empty: the first scrape interval after "
    "it serves again sees far fewer hits"
)
RESTART_TTFT = "requests to a cold engine miss the cache and queue behind its warm-up"
FRONTEND_TTFT = "tokenization queues in the starved API server before the engine sees a request"
FRONTEND_ENGINE = (
    "the starved front end releases requests to the engine more slowly and evenly "
    "spaced, so the engine's queue and prefill can only stay or shrink; it may "
    "not rise by more than half (or 50 ms)"
)
FRONTEND_CPU = "the tokenizer runs at its CPU ceiling"
THROTTLE_CLOCK = "the SM clock is halved"
THROTTLE_POWER = "dynamic power goes with clock x voltage squared: it falls by more than a third"
THROTTLE_TEMP = (
    "temperature is in degrees, not a ratio: cooling trouble lifts it by well over "
    "5 C even though power falls (a 20 % rule fails a 17 % rise of a valid incident)"
)
THROTTLE_ITL = (
    "decode is memory-bound and memory runs at 75 %: the GPU part of each step "
    "grows by a third, its fixed CPU part (~2 ms) does not, so ITL rises 15-30 %"
)
LINK_XID = "XID 74 (NVLink error) is reported on both ends of the failing link"
LINK_ERRORS = "a healthy NVLink counts no CRC errors; the failing one counts some every second"
LINK_RECOVERY = "the failing link drops into recovery every ~20 s; a healthy one never does"
LINK_BYTES = (
    "half of each end's peer traffic crossed the failing link, and it spends most of "
    "the time in recovery (the hop goes over PCIe meanwhile): NVLink bytes fall by "
    "~40 %, against swings of ~20 % from traffic"
)
LINK_PCIE = "the detoured hop adds GB/s to a PCIe link that otherwise carries MB/s"
LINK_ITL = "every decode step runs two all-reduces per layer over the failing hop"
DOWN_UP = "a dead server refuses every scrape"
DOWN_5XX = (
    "requests in flight on the dead replica are lost (5xx) in its first seconds; the "
    "series appears at its first increment, so it counts from 0"
)
LORA_WAIT = "requests whose adapter has no LoRA slot wait as deferred: from none to several"
LORA_TTFT = "deferred requests wait for a slot, and adapter loads stall steps"

# healthy-burst
BURST_RATE = (
    "interactive traffic rises by half of that hour's, or of an average hour's when quieter "
    "(less at the peak, where it stops at 80 % of capacity): the engines finish a fifth "
    "more requests or more (ordinary bursts swing the rate by ~15 %)"
)
BURST_TTFT = (
    "the engines have room for the extra requests: no queue forms, so TTFT stays within "
    "the noise of ordinary traffic (a quarter)"
)
BURST_ITL = (
    "a somewhat larger batch reads a little more KV per step; the weights dominate a "
    "decode step, so ITL stays within a quarter (ordinary bursts move it ~10 %)"
)
# step-work
STEP_ITL = (
    "every replica of the model runs a batch that is a third of its KV larger: each decode "
    "step reads that much more KV, so ITL rises on each replica, not on one outlier"
)
STEP_RUNNING = "the raised limits and the long answers keep many more sequences in the batch"
STEP_TOKENS = "more decoding sequences per step: more tokens per iteration"
STEP_NO_PREEMPT = "the batch stays well inside the KV cache: nothing is preempted"
STEP_NO_WAIT = "the raised limits admit the extra sequences at once: nothing waits for KV"
STEP_TTFT = (
    "prefill chunks are compute-bound, so the extra KV reads hide under them, and the "
    "short prompts of the long answers prefill in one step: TTFT rises by under 30 %"
)
# preemption
PREEMPT_RATE = (
    "each batch's answers grow together until, near its end, they and the interactive "
    "traffic outgrow the KV cache: the batch's newest sequences are preempted, every batch"
)
PREEMPT_TPOT = (
    "each step reads a nearly full KV cache, and a preempted sequence's recompute shows "
    "as one long gap in its stream: TPOT and ITL rise by a fifth or more"
)
PREEMPT_KV = "every batch fills the KV cache near its end, against under a tenth before"
PREEMPT_WAIT = (
    "preempted sequences go back to the waiting queue (reason capacity) until the batch's "
    "other answers end: vLLM re-queues them, and the queue was empty before"
)
PREEMPT_QUEUE = (
    "admissions hardly wait: interactive requests outrank the batch, and a preempted "
    "sequence's wait to resume is not queue time (vLLM measures it to the first "
    "scheduling only); slower steps add tens of ms, against kv-pressure's seconds"
)
PREEMPT_TTFT = (
    "TTFT rises only with the slower steps: by tens of ms, up to ~200 ms at the busiest "
    "hour, against kv-pressure's seconds"
)
# retry-storm
STORM_5XX = "attempts that wait longer than the gateway's upstream timeout end as 504s"
STORM_RETRIES = (
    "the gateway retries each attempt that times out unstarted upstream and the clients "
    "retry its 504s every second: from none to a third of a request per second or more, "
    "while unique traffic is unchanged"
)
STORM_DONE = (
    "each request completes once at most, so the engines finish no more than before "
    "(and the gateway's extra answers are all retries and errors)"
)
STORM_QUEUE = (
    "retried attempts join the engine queue again and again: it stays long after the "
    "brief slowdown that started the storm ends"
)
# gateway-errors
GATEWAY_5XX = "the gateway's auth path fails three requests in ten with a 5xx before routing"
GATEWAY_ENGINES = (
    "clients retry the 5xx and nearly all get through on a later attempt: the engines "
    "finish about as many requests as before (within a quarter: ordinary bursts)"
)
GATEWAY_LATENCY = "nothing changed behind the gateway: TTFT and ITL stay within their noise"
# artifact-regression
ARTIFACT_FAILS = (
    "the bad artifact answers a quarter as many golden-set items right: the prober's "
    "failed checks of that model at least double, even over the few items (one check per "
    "30 s) a baseline and a window hold"
)
ARTIFACT_LATENCY = "the artifact computes as fast as the good one: latency does not move"
ARTIFACT_ERRORS = "requests still succeed: only their answers are wrong"
# hidden-straggler
STRAGGLER_CLOCK = "the throttled GPU runs its SM clock at 75 %"
STRAGGLER_POWER = "dynamic power goes with clock x voltage squared: it falls with the clock"
STRAGGLER_ITL = (
    "memory runs at 92 % and the SM clock at 75 % of theirs: the GPU part of each step grows "
    "by a tenth to a third (decode, prefill chunks), so this replica's ITL rises by over 12 % "
    "(about a quarter)"
)
STRAGGLER_FLEET = (
    "one replica of several: the model's average ITL rises by that replica's share of the "
    "tokens (about a sixth of its rise once the others absorb its traffic, under 2 ms), "
    "which a fleet-wide view reads as noise"
)

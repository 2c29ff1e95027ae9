/**
 * What tsgym's own processes add to the reference's wire between each other (design decision D22 in docs/design.md):
 * one reply header from every tsgym resources server and one request header plus one result key between tsgym's
 * collector and its agent. A foreign caller (NeMo Gym's collector) sends neither header and so sees exactly the
 * reference's answers. Every process that speaks these imports them from here, so no layer reaches into another's
 * folder for a string.
 */

/** On every tsgym resources-server reply: the id of that server process's boot (a restart loses its sessions). */
export const SERVER_BOOT_HEADER = 'x-gym-server-boot';
/** The `/run` result key (seconds per loop step, in order, overload waits included). */
export const STEP_LATENCY_KEY = '_ng_step_latency_secs';
/** The `/run` request header with which a collector asks for `STEP_LATENCY_KEY` on success results. */
export const STEP_LATENCY_HEADER = 'x-gym-step-latency';
/**
 * On every `/v1/responses` call the remote agent makes to a service when its config names a `model_server`: the base
 * URL (`http://<model server>/ng-rollout/<rollout id>.<random>/v1`) through which this rollout's model calls must go, so the
 * model server records them against the rollout (docs/services.md, "The contract").
 */
export const MODEL_BASE_URL_HEADER = 'x-gym-model-base-url';

/** Routing: which handler answers a method and path, and the FastAPI-shaped 404 or 405 when none does. */
import type { GymReply } from './reply.js';
import type { GymRequest } from './request.js';

export type Handler = (req: GymRequest) => GymReply | Promise<GymReply>;

export class RouteTable {
  private readonly handlers = new Map<string, Handler>();
  private readonly paths = new Set<string>();

  add(method: string, path: string, handler: Handler): void {
    this.handlers.set(`${method} ${path}`, handler);
    this.paths.add(path);
  }

  has(method: string, path: string): boolean {
    return this.handlers.has(`${method} ${path}`);
  }

  handlerFor(req: GymRequest): Handler | undefined {
    // HEAD is GET without a body (node:http drops the body of a HEAD reply), so monitors and `curl -I` get the GET's status.
    return this.handlers.get(`${req.method === 'HEAD' ? 'GET' : req.method} ${req.path}`);
  }

  /** The reply to a request no handler matches: 405 on a known path, else 404. */
  unmatched(path: string): GymReply {
    const status = this.paths.has(path) ? 405 : 404;
    return { status, body: { detail: status === 405 ? 'Method Not Allowed' : 'Not Found' } };
  }
}

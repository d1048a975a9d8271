/**
 * EventQueue: events pushed from a callback (a session feed's deliveries), read as an async
 * stream that ends when the work producing them settles, with the work's own closing events
 * last. What lets a run's frames reach the client while its turn still streams.
 */
export class EventQueue<T> {
  #items: T[] = [];
  #wake: (() => void) | undefined;

  push(items: readonly T[]): void {
    if (items.length === 0) return;
    this.#items.push(...items);
    this.#wake?.();
  }

  /** Every item pushed until `work` settles, then the rest, then the items `work` resolves with. */
  async *until(work: Promise<readonly T[]>): AsyncGenerator<T> {
    let closing: readonly T[] | undefined;
    void work.then((items) => {
      closing = items;
      this.#wake?.();
    });
    while (true) {
      const items = this.#items;
      this.#items = [];
      yield* items;
      if (closing !== undefined && this.#items.length === 0) break;
      if (this.#items.length === 0) await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
    yield* closing;
  }
}

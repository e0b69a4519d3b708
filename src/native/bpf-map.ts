// BpfMap: a BPF map with its own file descriptor; raw byte keys and values, sizes checked.
import { InvalidArgumentError } from '../errors/index.js';
import { checkBuffer, checkPath, checkUint } from './args.js';
import { binding, type RawBpfMap, type RawMapInfo } from './binding.js';
import { adopt, BpfFdObject, openHandle } from './handle.js';

/** bpf_map_update_elem flags. */
export const BPF_ANY = 0;
export const BPF_NOEXIST = 1;
export const BPF_EXIST = 2;

/** A map's info: RawMapInfo without possibleCpus (a getter of BpfMap). */
export interface BpfMapInfo extends Omit<RawMapInfo, 'possibleCpus'> {}

/** A BPF map. Closing it closes this descriptor: the map lives on while pinned or used by a program. */
export class BpfMap extends BpfFdObject<RawBpfMap> {
  readonly #info: RawMapInfo;

  /** @internal Wraps a handle from the addon; use the static constructors or BpfObject.map. */
  constructor(handle: RawBpfMap) {
    const info = adopt(handle, (h) => h.info());
    super(handle, `BPF map ${info.name}`);
    this.#info = info;
  }

  /** Opens a map pinned on a bpffs. */
  static fromPinned(path: string): BpfMap {
    return new BpfMap(binding().BpfMap.fromPinned(checkPath('path', path)));
  }

  /** Opens a map by id (needs CAP_SYS_ADMIN). */
  static fromId(id: number): BpfMap {
    return new BpfMap(binding().BpfMap.fromId(checkUint('id', id, 0xffff_ffff, 1)));
  }

  get id(): number {
    return this.#info.id;
  }
  get name(): string {
    return this.#info.name;
  }
  /** libbpf's name of the map type ("percpu_array"). */
  get type(): string {
    return this.#info.typeName;
  }
  get keySize(): number {
    return this.#info.keySize;
  }
  get valueSize(): number {
    return this.#info.valueSize;
  }
  get maxEntries(): number {
    return this.#info.maxEntries;
  }
  get isPerCpu(): boolean {
    return this.#info.isPerCpu;
  }
  /** Number of possible CPUs: the number of values of a per-CPU entry. */
  get possibleCpus(): number {
    return this.#info.possibleCpus;
  }

  info(): BpfMapInfo {
    openHandle(this); // ClosedError once closed
    const { possibleCpus: _, ...info } = this.#info;
    return info;
  }

  /** The value under `key`, or undefined when there is none. Not for per-CPU maps. */
  lookup(key: Buffer): Buffer | undefined {
    const handle = openHandle(this);
    if (this.#info.isPerCpu) {
      throw new InvalidArgumentError(`map ${this.name} is per-CPU: use lookupPerCpu`);
    }
    return handle.lookup(this.#key(key));
  }

  /**
   * The per-CPU values under `key`: one Buffer of valueSize bytes per possible CPU (views of
   * one buffer of roundup(valueSize, 8) × possibleCpus bytes), or undefined when absent.
   */
  lookupPerCpu(key: Buffer): Buffer[] | undefined {
    const handle = openHandle(this);
    if (!this.#info.isPerCpu) throw new InvalidArgumentError(`map ${this.name} is not per-CPU`);
    const raw = handle.lookup(this.#key(key));
    if (raw === undefined) return undefined;
    const stride = this.#stride();
    const out: Buffer[] = [];
    for (let cpu = 0; cpu < this.#info.possibleCpus; cpu++) {
      out.push(raw.subarray(cpu * stride, cpu * stride + this.#info.valueSize));
    }
    return out;
  }

  /**
   * Sets the value under `key`. For per-CPU maps `value` is one Buffer per possible CPU, or a
   * single Buffer that every CPU gets. `flags`: BPF_ANY (default), BPF_NOEXIST, BPF_EXIST.
   */
  update(key: Buffer, value: Buffer | readonly Buffer[], flags = BPF_ANY): void {
    const handle = openHandle(this);
    checkUint('flags', flags);
    const k = this.#key(key);
    if (!this.#info.isPerCpu) {
      if (!Buffer.isBuffer(value))
        throw new InvalidArgumentError(`map ${this.name} takes one Buffer`);
      handle.update(k, this.#value(value), flags);
      return;
    }
    const n = this.#info.possibleCpus;
    const values = Buffer.isBuffer(value) ? Array.from({ length: n }, () => value) : value;
    if (!Array.isArray(values) || values.length !== n) {
      throw new InvalidArgumentError(`map ${this.name} needs ${n} per-CPU values`);
    }
    const stride = this.#stride();
    const raw = Buffer.alloc(stride * n);
    values.forEach((v: Buffer, cpu: number) => this.#value(v).copy(raw, cpu * stride));
    handle.update(k, raw, flags);
  }

  /** Deletes `key`. Returns false if there was no such key (not an error). */
  delete(key: Buffer): boolean {
    return openHandle(this).delete(this.#key(key));
  }

  /** Every key (a get_next_key walk; at most maxEntries keys). */
  keys(): Buffer[] {
    return openHandle(this).keys();
  }

  #stride(): number {
    return Math.ceil(this.#info.valueSize / 8) * 8;
  }

  #key(key: Buffer): Buffer {
    checkBuffer('key', key);
    if (key.length !== this.#info.keySize) {
      throw new InvalidArgumentError(
        `map ${this.name}: key must be ${this.#info.keySize} bytes, got ${key.length}`,
      );
    }
    return key;
  }

  #value(value: Buffer): Buffer {
    checkBuffer('value', value);
    if (value.length !== this.#info.valueSize) {
      throw new InvalidArgumentError(
        `map ${this.name}: value must be ${this.#info.valueSize} bytes, got ${value.length}`,
      );
    }
    return value;
  }
}

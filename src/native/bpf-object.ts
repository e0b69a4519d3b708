// BpfObject: a BPF ELF object opened and loaded with libbpf.
import { InvalidArgumentError, NotFoundError } from '../errors/index.js';
import { checkBuffer, checkPath, checkUint } from './args.js';
import { binding, type RawBpfObject, type SystemError } from './binding.js';
import { BpfMap } from './bpf-map.js';
import { BpfProgram } from './bpf-program.js';
import { adopt, NativeObject, openHandle, peekHandle } from './handle.js';

export interface BpfObjectOpenOptions {
  /** Bytes kept for the kernel's verifier/BTF log; default 4 MiB. */
  logSize?: number;
  /**
   * Kernel log level for every program load: 0 (default) logs only after a failure (libbpf
   * then retries with level 1), 1 or 2 always log (more verbose, slower).
   */
  logLevel?: number;
  /** Directory for maps declared with LIBBPF_PIN_BY_NAME; default /sys/fs/bpf. */
  pinRoot?: string;
}

/** A `const volatile` global of the object, as its BTF describes it. */
export interface RodataVariable {
  name: string;
  /** ".rodata" or ".rodata.<name>" */
  section: string;
  /** Byte offset inside the section. */
  offset: number;
  /** Size in bytes. */
  size: number;
}

/** The error of a failed load: a SystemError that carries the kernel's verifier log. */
export interface VerifierError extends SystemError {
  verifierLog: string;
}

export function isVerifierError(err: unknown): err is VerifierError {
  return err instanceof Error && typeof (err as Partial<VerifierError>).verifierLog === 'string';
}

/**
 * A BPF object file. Open it, adjust it (rodata, map pins, reused maps, map sizes), load it,
 * then take its programs and maps: they are independent objects with their own descriptors
 * and stay valid after the BpfObject is closed. Closing it releases libbpf's object and its
 * descriptors.
 */
export class BpfObject extends NativeObject<RawBpfObject> {
  readonly path: string;

  private constructor(handle: RawBpfObject, path: string) {
    super(handle, `BPF object ${path}`);
    this.path = path;
  }

  /** Opens (does not load) the ELF object at `path`. Throws SystemError. */
  static open(path: string, opts: BpfObjectOpenOptions = {}): BpfObject {
    checkPath('path', path);
    const raw: { logSize?: number; logLevel?: number; pinRoot?: string } = {};
    if (opts.logSize !== undefined)
      raw.logSize = checkUint('logSize', opts.logSize, 0x7fff_ffff, 1024);
    if (opts.logLevel !== undefined) raw.logLevel = checkUint('logLevel', opts.logLevel, 2);
    if (opts.pinRoot !== undefined) raw.pinRoot = checkPath('pinRoot', opts.pinRoot);
    const handle = new (binding().BpfObject)(path, raw);
    return adopt(handle, (h) => new BpfObject(h, path));
  }

  get loaded(): boolean {
    return !this.closed && peekHandle(this).loaded;
  }

  /** Program (function) names. */
  programNames(): string[] {
    return openHandle(this).programNames();
  }

  /** Map names, including libbpf's internal ones ("<obj>.rodata"). */
  mapNames(): string[] {
    return openHandle(this).mapNames();
  }

  /** Every `const volatile` variable of the object's .rodata sections. */
  rodataVariables(): RodataVariable[] {
    return openHandle(this).rodataVariables();
  }

  /**
   * Sets the initial value of the `const volatile` variable `name` before load. `bytes` must
   * be exactly the variable's size (little-endian, as the BPF program sees it).
   */
  setRodata(name: string, bytes: Buffer): void {
    const h = openHandle(this);
    checkBuffer('bytes', bytes);
    const v = h.rodataVariables().find((x) => x.name === name);
    if (v === undefined)
      throw new NotFoundError(`${this.path}: no const volatile variable ${name}`);
    if (bytes.length !== v.size) {
      throw new InvalidArgumentError(
        `${this.path}: ${name} is ${v.size} bytes, got ${bytes.length}`,
      );
    }
    h.setRodata(name, bytes);
  }

  /**
   * Before load: the map is pinned at `path`; if a compatible map is pinned there already,
   * the object reuses it (libbpf's pin-path semantics).
   */
  setMapPinPath(map: string, path: string): void {
    openHandle(this).setMapPinPath(map, checkPath('path', path));
  }

  /** Before load: the object uses `existing` instead of creating map `name`. */
  reuseMap(name: string, existing: BpfMap): void {
    if (!(existing instanceof BpfMap) || existing.closed) {
      throw new InvalidArgumentError('reuseMap: existing must be an open BpfMap');
    }
    openHandle(this).reuseMap(name, existing.fd);
  }

  /** Before load: the size of map `name`. */
  setMaxEntries(name: string, maxEntries: number): void {
    openHandle(this).setMaxEntries(name, checkUint('maxEntries', maxEntries, 0xffff_ffff, 1));
  }

  /** Loads every program and creates every map. Throws VerifierError (a SystemError with `verifierLog`). */
  load(): void {
    openHandle(this).load();
  }

  /** A loaded program (own descriptor). */
  program(name: string): BpfProgram {
    return new BpfProgram(openHandle(this).program(name));
  }

  /** A created map (own descriptor). */
  map(name: string): BpfMap {
    return new BpfMap(openHandle(this).map(name));
  }
}

// Test helper: what a call that must fail with bad input says.
import { expect } from 'vitest';
import { InvalidArgumentError } from '../../src/errors/index.js';

/** The message of the InvalidArgumentError that `fn` throws; fails the test otherwise. */
export function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return (err as InvalidArgumentError).message;
  }
  throw new Error('expected an InvalidArgumentError, got none');
}

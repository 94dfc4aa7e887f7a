/** Backend packages as a program imports them (re-exported for the typed programs). */
export { CudaBackend, IsolatedCudaBackend } from '@ringgrain/cuda-backend';
export { WorkerDiedError } from '@ringgrain/cpu-backend';

// `node --import …/toolhost-sdk/lib/register.mjs`: make `toolhost-sdk` resolve to this SDK.
import { register } from 'node:module';

register(new URL('./hooks.mjs', import.meta.url));

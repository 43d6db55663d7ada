// The release version reported by `/login/extended` and the OpenAPI document.

import pkg from '../package.json' with { type: 'json' };

export const RELEASE: string = pkg.version;

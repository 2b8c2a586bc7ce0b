/** API v1 management of pages, their access lists and components (`dashboards:read` / `:write`). */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../../src/http/envelope'
import { Deleted } from '../../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../../src/http/pagination'
import type { V1Kit } from '../../../src/http/v1'
import { Component, ComponentInput, ComponentPatch, CreatedShareLink, Page, PageAccessEntry, PageAccessInput, PageAccessPatch, PageInput, PagePatch, ShareLink, ShareLinkInput } from '../model'
import type { PageService } from './service'
import type { ShareLinks } from './share-links'

const tags = ['Dashboards']
const PageParams = t.Object({ pageId: t.String() })
const ComponentParams = t.Object({ pageId: t.String(), componentId: t.String() })

export function dashboardRoutes(v1: V1Kit, pages: PageService, shareLinks: ShareLinks) {
  return new Elysia({ name: 'dashboards', prefix: '/api/v1/pages' })
    .use(v1)
    .get('', ({ actor, query }) => pages.list(actor, pageRequest(query)), {
      scopes: ['dashboards:read'],
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(Page)),
      detail: { tags, summary: 'Pages you can see (creator, access list, or administrator), oldest first.' },
    })
    .post(
      '',
      ({ actor, body, idempotency }) => pages.create(actor, body, idempotency),
      {
        scopes: ['dashboards:write'],
        body: PageInput,
        response: responses(Envelope(Page), { status: 201, extra: [409, 422] }),
        detail: { tags, summary: 'Create a page; you are its creator. Names are unique in the organization (any case).' },
      },
    )
    .get('/:pageId', ({ actor, params }) => pages.get(actor, params.pageId), {
      scopes: ['dashboards:read'],
      params: PageParams,
      response: responses(Envelope(Page)),
      detail: { tags, summary: 'A page you can see.' },
    })
    .patch('/:pageId', ({ actor, params, body }) => pages.update(actor, params.pageId, body), {
      scopes: ['dashboards:write'],
      params: PageParams,
      body: PagePatch,
      response: responses(Envelope(Page), { extra: [409] }),
      detail: { tags, summary: 'Rename or retitle a page (its creator or an administrator).' },
    })
    .delete('/:pageId', ({ actor, params }) => pages.delete(actor, params.pageId), {
      scopes: ['dashboards:write'],
      params: PageParams,
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Delete a page and its components (its creator or an administrator).' },
    })
    .get('/:pageId/access', ({ actor, params, query }) => pages.accessList(actor, params.pageId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: PageParams,
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(PageAccessEntry)),
      detail: { tags, summary: "A page's access list: users and teams." },
    })
    .post(
      '/:pageId/access',
      ({ actor, params, body, idempotency }) => pages.grant(actor, params.pageId, body, idempotency),
      {
        scopes: ['dashboards:write'],
        params: PageParams,
        body: PageAccessInput,
        response: responses(Envelope(PageAccessEntry), { status: 201, extra: [409, 422] }),
        detail: {
          tags,
          summary: 'Give a user `{userId}` or a team `{teamId}` of your organization access, as `viewer` (default) or `editor` (creator or administrator).',
        },
      },
    )
    .patch('/:pageId/access/:principalId', ({ actor, params, body }) => pages.updateAccess(actor, params.pageId, params.principalId, body.level), {
      scopes: ['dashboards:write'],
      params: t.Object({ pageId: t.String(), principalId: t.String() }),
      body: PageAccessPatch,
      response: responses(Envelope(PageAccessEntry)),
      detail: { tags, summary: "Change an access entry's level: `viewer` or `editor` (creator or administrator)." },
    })
    .delete('/:pageId/access/:principalId', ({ actor, params }) => pages.revoke(actor, params.pageId, params.principalId), {
      scopes: ['dashboards:write'],
      params: t.Object({ pageId: t.String(), principalId: t.String() }),
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Take a user or team off the access list.' },
    })
    .get('/:pageId/components', ({ actor, params, query }) => pages.components(actor, params.pageId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: PageParams,
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(Component)),
      detail: { tags, summary: 'Components of a page in grid order, with their current data and timestamp.' },
    })
    .post(
      '/:pageId/components',
      ({ actor, params, body, idempotency }) => pages.createComponent(actor, params.pageId, body, idempotency),
      {
        scopes: ['dashboards:write'],
        params: PageParams,
        body: ComponentInput,
        response: responses(Envelope(Component), { status: 201, extra: [409, 422] }),
        detail: { tags, summary: 'Add a component; its `id` is the `componentId` of POST /api/component and its `type` is fixed. 409 past `display.maxComponentsPerPage` (100).' },
      },
    )
    .get('/:pageId/components/:componentId', ({ actor, params }) => pages.component(actor, params.pageId, params.componentId), {
      scopes: ['dashboards:read'],
      params: ComponentParams,
      response: responses(Envelope(Component)),
      detail: { tags, summary: 'A component with its current data and timestamp.' },
    })
    .patch(
      '/:pageId/components/:componentId',
      ({ actor, params, body }) => pages.updateComponent(actor, params.pageId, params.componentId, body),
      {
        scopes: ['dashboards:write'],
        params: ComponentParams,
        body: ComponentPatch,
        response: responses(Envelope(Component)),
        detail: { tags, summary: "Change a component's title or grid position (not its type or data)." },
      },
    )
    .delete('/:pageId/components/:componentId', ({ actor, params }) => pages.deleteComponent(actor, params.pageId, params.componentId), {
      scopes: ['dashboards:write'],
      params: ComponentParams,
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Delete a component.' },
    })
    .get('/:pageId/share-links', ({ actor, params, query }) => shareLinks.list(actor, params.pageId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: PageParams,
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(ShareLink)),
      detail: { tags, summary: "A page's share links, oldest first (its editors; 403 for viewers). Tokens are never shown again." },
    })
    .post(
      '/:pageId/share-links',
      ({ actor, params, body, idempotency }) => shareLinks.create(actor, params.pageId, body, idempotency),
      {
        scopes: ['dashboards:write'],
        params: PageParams,
        body: ShareLinkInput,
        response: responses(Envelope(CreatedShareLink), { status: 201, extra: [409, 422] }),
        detail: {
          tags,
          summary:
            'Create a read-only share link (its editors): `url` (`/s/<token>`) shows the live page to anyone holding it, without signing in, until `expiresAt` or revocation. Shown once. 409 past `display.maxShareLinksPerPage` (100).',
        },
      },
    )
    .get('/:pageId/share-links/:linkId', ({ actor, params }) => shareLinks.get(actor, params.pageId, params.linkId), {
      scopes: ['dashboards:read'],
      params: t.Object({ pageId: t.String(), linkId: t.String() }),
      response: responses(Envelope(ShareLink)),
      detail: { tags, summary: 'A share link of the page (its editors), without its token.' },
    })
    .delete('/:pageId/share-links/:linkId', ({ actor, params }) => shareLinks.revoke(actor, params.pageId, params.linkId), {
      scopes: ['dashboards:write'],
      params: t.Object({ pageId: t.String(), linkId: t.String() }),
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Revoke a share link (its editors): it stops at once and its open viewers are closed within a second.' },
    })
}

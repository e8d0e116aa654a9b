/**
 * For each preset, an input whose optional fields are all absent and one where every field the spec and the real
 * shapes know is present (every section, every optional item field, every detail id). Generated here; every text
 * is made up.
 */
import type { Row } from '../../../src/core/types.js';
import type { PresetName } from '../../../src/transforms/normalize.js';
import { companyProfile, detail, imageItem, review, serpPage } from '../fixtures.js';

export interface PresetInputs {
  /** The smallest input that still yields a row: optional fields all absent. */
  bare: Row;
  /** Every field present. */
  full: Row;
  /** The unit's parameters, as the crawl sets them. */
  unitParams?: Record<string, unknown>;
}

const FETCHED_AT = '2025-03-15T12:00:00.000Z';

function fullSerpPage(): Row {
  const page = serpPage({
    query: 'widget shops',
    organic: [
      {
        link: 'https://a.example.test/',
        extra: {
          image_url: 'https://img.example.test/a.jpg',
          image_alt: 'A',
          // A Maps result page's place fields.
          fid: '0x1234abcd:0xdeadbeef',
          address: '1 Main St, Widgetville',
          phone: '+15550100',
          category: [{ title: '4-star hotel' }, { id: 'hotel', title: 'Hotel' }],
          tags: [{ group_id: 'amenities', group_title: 'Amenities', key_id: 21, value_title: 'Pool' }],
          summary: 'A hotel of widgets.',
          rating: 4.5,
          reviews_cnt: 6840,
          latitude: 29.75,
          longitude: -95.35,
          claimed: true,
          map_link: 'https://maps.example.test/place/1',
        },
      },
    ],
    oragnic: [{ link: 'https://b.example.test/' }],
    images: [
      imageItem(1, {
        image_url: 'https://img.example.test/1.jpg',
        source_logo: 'https://img.example.test/logo1.png',
        recipe: {
          rating: 4.5,
          reviews_cnt: 120,
          title: 'Widget pie',
          ingredients: ['flour', 'widgets'],
          summary: 'A pie.',
          duration: '1 hr',
          duration_sec: 3600,
          volume: '8 servings',
        },
      }),
    ],
    related: [
      {
        items: [
          {
            text: 'widget repair',
            link: 'https://s.example.test/r1',
            image: 'data:image/png;base64,AAAA',
            image_url: 'https://i.example.test/1.jpg',
            rank: 1,
          },
        ],
        rank: 1,
        global_rank: 15,
      },
      {
        text: 'widget prices',
        link: 'https://s.example.test/r2',
        image_url: 'https://i.example.test/2.jpg',
        expanded: true,
        rank: 2,
        global_rank: 16,
      },
    ],
  });
  return {
    ...page,
    general: { ...(page.general as Row), detected_query: 'widget shops', country_code: 'TL' },
    videos: [
      {
        link: 'https://video.example.test/v1',
        title: 'Widgets explained',
        source: 'VideoSite',
        duration: '14:02',
        duration_sec: 842,
        author: 'Widget Channel',
        date: '1 month ago',
        image: 'data:image/jpeg;base64,AAAA',
        image_url: 'https://img.example.test/v1.jpg',
        rank: 1,
        global_rank: 7,
      },
    ],
    people_also_ask: [
      {
        question: 'What is a widget?',
        answer: 'A small gadget.',
        answer_source: 'Widget Wiki',
        answer_link: 'https://wiki.example.test/widget',
        answer_display_link: 'wiki.example.test › widget',
        answers: [
          { type: 'answer', value: { text: 'A small gadget.' }, rank: 1 },
          { type: 'list', value: ['one', 'two'], rank: 2 },
        ],
        rank: 1,
        global_rank: 3,
      },
    ],
    perspectives: [
      {
        title: 'My widgets',
        text: 'I love widgets.',
        author: 'widget_fan',
        source: 'Forum · 4 days ago',
        date: '4 days ago',
        link: 'https://forum.example.test/p/1',
        image: 'https://img.example.test/p1.jpg',
        image_url: 'https://img.example.test/p1.jpg',
        rank: 1,
        global_rank: 9,
      },
    ],
    knowledge: {
      title: 'Widget Shop',
      subtitle: 'Store',
      type: 'Store',
      description: 'A shop of widgets.',
      description_source: 'Encyclopedia',
      description_link: 'https://enc.example.test/widget-shop',
      kgmid: '/g/11abcdef',
      link: 'https://maps.example.test/widget-shop',
      image: 'https://img.example.test/k.jpg',
      fid: '0x1234abcd:0xdeadbeef',
      rating: 4,
      reviews_cnt: 321,
      facts: [{ predicate: 'address', title: 'Address', value: '1 Main St', link: 'https://maps.example.test/a' }],
    },
    top_stories: {
      items: [
        {
          title: 'Widgets in the news',
          link: 'https://news.example.test/1',
          source: 'News',
          date: '2 hours ago',
          image_url: 'https://img.example.test/n1.jpg',
          rank: 1,
          global_rank: 5,
        },
      ],
    },
    top_ads: [{ title: 'Buy widgets', link: 'https://ads.example.test/1' }],
    ai_overview: { text: 'Widgets are small.' },
    fetched_at: FETCHED_AT,
  };
}

function fullReview(): Row {
  return review({
    rating: '4.5/5',
    created: 'Edited 2 weeks ago',
    date: '2025-02-22',
    review_reply: 'Thanks!',
    review_reply_created: 'a week ago',
    photos: ['https://p.example.test/1.jpg'],
    details: [
      detail('HOTELS_ASPECT_ROOMS', 5),
      detail('HOTELS_ASPECT_SERVICES', '4'),
      detail('HOTELS_ASPECT_LOCATION', 3),
      detail('HOTELS_PILOT_TRIP_TYPE', 'Vacation'),
      detail('HOTELS_PILOT_TRAVEL_GROUP_TYPE', 'Family'),
      detail('HOTELS_VIBE', 'Quiet'),
      detail('HOTELS_TIPS_TOPICS_ROOMS', 'High floor'),
      detail('HOTELS_TIPS_TOPICS_NEARBY_ACTIVITIES', 'Parks'),
      detail('HOTELS_TIPS_TOPICS_SAFETY', 'Safe'),
      detail('HOTELS_TIPS_TOPICS_WALKABILITY', 'Walkable'),
      detail('TTD_WAIT_TIME', 'No wait'),
    ],
  });
}

function fullCompanyProfile(): Row {
  return companyProfile({
    timestamp: '2024-12-22T06:43:58.438Z',
    additional_information: 'Founded in a garage.',
    country_codes_array: ['DE', 'FR'],
    affiliated: [{ Links: 'https://social.example.test/company/labs', subtitle: 'R&D', title: 'Acme Labs' }],
    funding: {
      last_round_date: '2019-07-10T00:00:00.000Z',
      last_round_type: 'Series B',
      rounds: 3,
      last_round_raised: 'US$ 5M',
    },
    stock_info: {
      id: 'ACME',
      datetime: 'Nov 1, 2025',
      stock_exchange: 'XETRA',
      stock_ticker: 'ACM',
      stock_price: '12.34',
      stock_price_change: '+0.5%',
      stock_provider: 'Quotes Inc',
    },
    updates: [
      {
        title: 'Acme Widgets',
        text: 'We shipped a widget.',
        time: '2d',
        likes_count: 12,
        comments_count: 3,
        external_link: 'https://blog.example.test/1',
        images: ['https://img.example.test/u1.png'],
        videos: ['https://video.example.test/u1.mp4'],
        post_url: 'https://social.example.test/posts/1',
        post_id: 'p1',
        date: '2025-01-02T03:04:05.000Z',
      },
    ],
    // A value that does not convert: kept in `_raw_values`.
    followers: 'many',
  });
}

export const PRESET_INPUTS: Record<PresetName, PresetInputs> = {
  company_profile: { bare: {}, full: fullCompanyProfile() },
  serp_organic: { bare: { organic: [{}] }, full: fullSerpPage() },
  serp_related: { bare: { related: [{ text: 'widgets' }] }, full: fullSerpPage() },
  serp_images: { bare: { images: [{}] }, full: fullSerpPage() },
  serp_pages: { bare: { general: {} }, full: fullSerpPage() },
  reviews: {
    bare: { reviews: [{}] },
    full: { reviews: [fullReview()], fid: '0x1234abcd:0xdeadbeef', fetched_at: FETCHED_AT },
    unitParams: { fid: '0x1234abcd:0xdeadbeef', start: 10 },
  },
};

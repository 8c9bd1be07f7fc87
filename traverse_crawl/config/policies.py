"""TRAVERSE_POLICY's presets: what each crawl policy sets (docs/crawling-real-sites.md,
"Policies").

``traverse`` keeps Traverse's behaviour; ``web`` turns on the rules a crawl of sites one
does not know needs. Each value is a default: a setting the user sets wins (the add-on
applies them at its own priority). Pure data: the features read the settings, never
this table.
"""

from __future__ import annotations

from typing import Any

# The ``web`` policy's TRAVERSE_BLOCK_PATTERNS (searched by politeness/block_pages.py):
# signatures of the interstitial and denial pages of common bot-protection services,
# each specific to the page that replaces the content (a page that merely loads the
# vendor's script or embeds a captcha widget is not matched). What each matches, and
# where it comes from: docs/crawling-real-sites.md, "Challenge-page signatures". Local
# ``(?i:...)`` groups only, no global flags, so the list also compiles as one alternation.
CHALLENGE_PATTERNS: tuple[str, ...] = (
    # Cloudflare: the "Just a moment..." interstitial and its challenge options object.
    r"<title>Just a moment\.\.\.</title>",
    r"window\._cf_chl_opt\b",
    r"/cdn-cgi/challenge-platform/h/[a-z]/orchestrate/(?:chl_page|managed|jsch)/",
    # Cloudflare's block page ("Sorry, you have been blocked", errors 1006-1020).
    r"<title>Attention Required! \| Cloudflare</title>",
    # Akamai's "Access Denied" page with its reference number.
    r"(?i:<title>\s*Access Denied\s*</title>)[\s\S]{0,4096}?"
    r"Reference(?:\s|&#32;)*(?:#|&#35;)\s*\d+(?:\.|&#46;)[0-9a-f]+(?:\.|&#46;)\d+",
    # DataDome's captcha or interstitial, served from captcha-delivery.com.
    r"//geo\.captcha-delivery\.com/(?:captcha|interstitial)/",
    # PerimeterX / HUMAN's "Press & Hold" block page.
    r"<div id=[\"']px-captcha[\"']",
    # Imperva / Incapsula: the incident page and its challenge iframe.
    r"Incapsula incident ID",
    r"/_Incapsula_Resource\?(?:CWUDNSAI|SWUDNSAI)=",
    # AWS WAF's challenge interstitial.
    r"window\.gokuProps\s*=",
    # Google's "unusual traffic" page (reCAPTCHA-only).
    r"Our systems have detected unusual traffic from your computer network",
    # A page whose title is a human check and whose body holds an hCaptcha, reCAPTCHA
    # or Turnstile widget: challenge-only, not a form that also has a captcha.
    r"(?i:<title>[^<]{0,80}(?:verify(?:ing)? you are (?:a )?human|are you a robot"
    r"|human verification|security check)[^<]{0,80}</title>)"
    r"(?=[\s\S]*?(?:class=[\"'](?:h-captcha|g-recaptcha|cf-turnstile)[\"']))",
)


POLICIES: dict[str, dict[str, Any]] = {
    "traverse": {},
    "web": {
        "TRAVERSE_TRAP_GUARDS": True,
        "TRAVERSE_SEEN_KEY": "no-tracking",
        "TRAVERSE_ROBOTS_META": "obey",
        "TRAVERSE_DELAY_FACTOR": 2,
        "TRAVERSE_BLOCK_STOP_AFTER": 5,
        "TRAVERSE_BLOCK_PATTERNS": list(CHALLENGE_PATTERNS),
    },
}

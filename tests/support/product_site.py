"""A small shop on loopback, and the extraction file whose items the tests compute by hand.

The listing repeats a title at two nodes, writes an entity (``&amp;``) in one title,
pads a price with whitespace and gives links as attributes, so spans are checked
where they exist and where they must not.
"""

from __future__ import annotations

LISTING = """<!doctype html>
<html><head><title>Shop</title></head>
<body>
<div class="listing">
  <div class="card"><h2>Lamp</h2><span class="price"> $1,299.00 </span>
    <span class="tag">home</span> <span class="tag">light</span>
    <a href="/shop/item/1.html">more</a></div>
  <div class="card"><h2>Lamp</h2><span class="price">$15</span>
    <a href='item/2.html'>more</a></div>
  <div class="card"><h2>Salt &amp; Pepper</h2><span class="price">call us</span>
    <span class="tag">kitchen</span></div>
</div>
</body></html>"""

ITEM_1 = """<html><head><title>Lamp</title><meta itemprop="sku" content="L-1"></head>
<body><h1>Lamp</h1><p class="stock">1,024</p>
<p class="available" data-available="yes">in stock</p><p class="rating">4.5</p>
<a href="/">home</a></body></html>"""

ITEM_2 = """<html><head><title>Lamp two</title></head>
<body><h1>Lamp
two</h1><p class="stock">none left</p><p class="rating">-3.5</p></body></html>"""

ABOUT = """<html><body><h1>About</h1><div class="card"><h2>Not a product</h2></div></body></html>"""

HOME = """<html><body><a href="/shop/list.html">shop</a> <a href="/shop/item/1.html">1</a>
<a href="/shop/item/2.html">2</a> <a href="/about.html">about</a></body></html>"""

PAGES = {
    "/": HOME,
    "/shop/list.html": LISTING,
    "/shop/item/1.html": ITEM_1,
    "/shop/item/2.html": ITEM_2,
    "/about.html": ABOUT,
}

RULES = """
[[types]]
name = "card"
paths = ["/shop/*"]
require = "css:div.listing"
each = "css:div.card"
[types.fields]
title = "css:h2::text"
price = { selector = "css:.price::text", re = '([0-9.,]+)', type = "number" }
tags  = { selector = "css:.tag::text", many = true }
link  = { selector = "xpath:.//a/@href", url = true }

[[types]]
name = "product"
paths = ["/shop/item/*"]
[types.fields]
name = "css:h1::text"
sku = "css:meta[itemprop=sku]::attr(content)"
stock = { selector = "css:.stock::text", type = "integer" }
available = { selector = "css:.available::attr(data-available)", type = "boolean" }
rating = { selector = "css:.rating::text", type = "number" }
"""
